"""Java's RFC 2253 rendering of certificate subjects (X500Principal.getName()): the DN Kafka's principal mapping rules see."""

from cryptography import x509

__all__ = ["distinguished_name", "name_to_rfc2253"]

# Keywords Java's X500Principal.getName() (RFC 2253 format) emits; every other attribute
# type is printed as its dotted OID with the value as "#" + hex of its DER encoding.
_RFC2253_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "STREET",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# PrintableString, T61String, IA5String, GeneralString, BMPString, UTF8String: Java prints these
# as text; any other value type (e.g. NumericString, UniversalString) as "#hex".
_STRING_TAGS = frozenset({0x13, 0x14, 0x16, 0x1B, 0x1E, 0x0C})
_ESCAPEES = ',=+<>#;"\\'


def _der_items(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """Split concatenated DER into (tag, content, whole TLV) triples."""
    items = []
    i = 0
    while i < len(data):
        tag = data[i]
        if tag & 0x1F == 0x1F:
            raise ValueError("high-tag-number form is not expected in a Name")
        length = data[i + 1]
        header = 2
        if length & 0x80:
            count = length & 0x7F
            length = int.from_bytes(data[i + 2 : i + 2 + count], "big")
            header += count
        end = i + header + length
        if end > len(data):
            raise ValueError("truncated DER")
        items.append((tag, data[i + header : end], data[i:end]))
        i = end
    return items


def _decode_oid(content: bytes) -> str:
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = arcs[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return ".".join(str(a) for a in head + arcs[1:])


def _escape_value(text: str) -> str:
    """AVA.toRFC2253String's escaping: specials anywhere, NUL as \\00, edge spaces and CRs."""
    chars: list[str] = []
    for c in text:
        if c in _ESCAPEES:
            chars.append("\\")
            chars.append(c)
        elif c == "\0":
            chars.extend("\\00")  # three separate chars, as Java appends them
        else:
            chars.append(c)
    lead = 0
    while lead < len(chars) and chars[lead] in " \r":
        lead += 1
    trail = len(chars) - 1
    while trail >= 0 and chars[trail] in " \r":
        trail -= 1
    return "".join(("\\" + c) if (i < lead or i > trail) else c for i, c in enumerate(chars))


def _ava_to_rfc2253(oid: str, value_tlv: tuple[int, bytes, bytes]) -> str:
    tag, content, whole = value_tlv
    keyword = _RFC2253_KEYWORDS.get(oid, oid)
    if keyword[0].isdigit() or tag not in _STRING_TAGS:
        return f"{keyword}=#{whole.hex()}"
    # Java decodes the raw content bytes as UTF-8 whatever the string type (so BMPString
    # values with non-ASCII characters come out garbled there too).
    return f"{keyword}={_escape_value(content.decode('utf-8', errors='replace'))}"


def name_to_rfc2253(name: x509.Name) -> str:
    """A Name as ``X500Principal.getName()`` prints it (RFC 2253, last RDN first)."""
    (seq_tag, rdn_sequence, _), *rest = _der_items(name.public_bytes())
    if seq_tag != 0x30 or rest:
        raise ValueError("not a DER Name")
    rdns: list[str] = []
    for set_tag, rdn, _ in _der_items(rdn_sequence):
        if set_tag != 0x31:
            raise ValueError("RDN is not a SET")
        avas = []
        for ava_tag, ava, _ in _der_items(rdn):
            if ava_tag != 0x30:
                raise ValueError("AttributeTypeAndValue is not a SEQUENCE")
            (oid_tag, oid, _), value = _der_items(ava)
            if oid_tag != 0x06:
                raise ValueError("attribute type is not an OID")
            avas.append(_ava_to_rfc2253(_decode_oid(oid), value))
        rdns.append("+".join(avas))
    return ",".join(reversed(rdns))


def distinguished_name(cert: x509.Certificate) -> str:
    """The subject DN of ``cert`` exactly as Kafka sees it (``X500Principal.getName()``).

    Differences from cryptography's ``Name.rfc4514_string()``: Java escapes ``=`` and ``#``
    everywhere and every leading/trailing space or CR (cryptography: only a leading ``#``/space
    and one trailing space); attribute types without an RFC 2253 keyword (emailAddress,
    serialNumber, title, ...) are printed by Java as ``OID=#<hex of the DER value>``, by
    cryptography as ``OID=text``.
    """
    return name_to_rfc2253(cert.subject)
