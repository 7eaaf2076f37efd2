"""CRC-32C (Castagnoli, RFC 4960 appendix B), the checksum of the PROXY protocol v2 TLV PP2_TYPE_CRC32C.

Table-driven, one byte at a time: a v2 header is at most a few kilobytes, and the check runs once per connection.
"""

# The reflected Castagnoli polynomial 0x1EDC6F41.
_POLYNOMIAL = 0x82F63B78
_ALL_ONES = 0xFFFFFFFF
_BYTE_VALUES = 256
_BITS_PER_BYTE = 8
_LOW_BYTE = 0xFF


def _table() -> tuple[int, ...]:
    entries = []
    for value in range(_BYTE_VALUES):
        crc = value
        for _ in range(_BITS_PER_BYTE):
            crc = (crc >> 1) ^ _POLYNOMIAL if crc & 1 else crc >> 1
        entries.append(crc)
    return tuple(entries)


_TABLE = _table()


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """The CRC-32C of `data` (initial value and final XOR all ones, as RFC 4960 and iSCSI use it)."""
    crc = _ALL_ONES
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & _LOW_BYTE] ^ (crc >> _BITS_PER_BYTE)
    return crc ^ _ALL_ONES
