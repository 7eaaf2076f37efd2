"""Configuration errors that name the key, the value and the reason."""


class ConfigError(ValueError):
    def __init__(self, key: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid value {value!r} for configuration {key}: {reason}")
        self.key = key
        self.value = value
        self.reason = reason
