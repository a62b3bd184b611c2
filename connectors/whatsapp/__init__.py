"""WhatsApp Cloud API connector: webhook (inbound) and sender (outbound)."""

from connectors.whatsapp.resolver import Destination, Route, StaticResolver  # noqa: F401
from connectors.whatsapp.sender import SendResult, WhatsAppSender  # noqa: F401
from connectors.whatsapp.webhook import SeenCache, WebhookConfig, create_app, parse_payload  # noqa: F401
