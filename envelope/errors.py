"""Errors split like h11's: the peer broke the protocol vs. we cannot serve it."""


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid Kafka message."""


class FrameSizeError(ProtocolError):
    """A frame's size prefix is negative or above the configured limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"invalid frame size {size} (limit {limit})")
        self.size = size
        self.limit = limit


class UnsupportedApiError(ProtocolError):
    """The API key or version is not one this side can decode."""

    def __init__(self, api_key: int, api_version: int) -> None:
        super().__init__(f"unsupported api key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
