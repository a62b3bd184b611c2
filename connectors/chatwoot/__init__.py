"""Chatwoot-style conversation webhook: ``conversation_status_changed`` → ``channel.conversation.events``."""

from connectors.chatwoot.webhook import ChatwootConfig, create_app, parse_status_change  # noqa: F401
