"""Channel connectors: turn channel payloads into ``InboundMessage`` and send
``OutboundReply`` back. Each one only parses, maps and hands over (the
composition root injects the Kafka publisher)."""
