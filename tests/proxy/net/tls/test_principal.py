"""ssl.principal.mapping.rules and RFC 2253 subjects.

Expected values were cross-checked against Kafka 4.3's SslPrincipalMapper and Java 17's
X500Principal.getName().
"""

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID, ObjectIdentifier

from proxy.net.tls.principal import NoMatchingRule, parse_mapping_rules, principal_for_peer
from proxy.net.tls.subject import distinguished_name
from proxy.properties import ConfigError

KEY = "listener.name.client.ssl.principal.mapping.rules"
FACTS_DN = "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"


@pytest.mark.parametrize(
    ("rules", "dn", "expected"),
    [
        # the example from protocol-facts.md
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", FACTS_DN, "serviceuser"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=other,OU=People", "CN=other,OU=People"),
        ("DEFAULT", FACTS_DN, FACTS_DN),
        (None, FACTS_DN, FACTS_DN),  # unset means DEFAULT
        ("", FACTS_DN, FACTS_DN),
        ("   ", FACTS_DN, FACTS_DN),
        # case flags
        ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L", "CN=Alice,OU=Ops,O=x", "alice@ops"),
        ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U", "CN=Alice,OU=Ops,O=x", "ALICE@OPS"),
        ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/", "CN=Alice,OU=Ops,O=x", "Alice@Ops"),
        # first applicable rule wins, DEFAULT included
        ("RULE:^CN=(.*?),.*$/first-$1/,RULE:^CN=(.*?),.*$/second-$1/", "CN=a,O=b", "first-a"),
        ("DEFAULT,RULE:.*/never/", "CN=a", "CN=a"),
        ("RULE:^CN=x$/no/,RULE:^CN=(.*)$/$1/", "CN=a", "a"),
        # the pattern must match the whole DN (Matcher.matches), not a part of it
        ("RULE:CN=a/hit/,DEFAULT", "CN=a,O=b", "CN=a,O=b"),
        ("RULE:.*(O=\\w+).*/$1/", "CN=a,O=bee,C=x", "O=bee"),
        # then it replaces every match (String.replaceAll), including Java's empty match at the end
        ("RULE:x*/-/", "xxx", "--"),
        ("RULE:.*?/-/", "ab", "-a-b-"),
        # back references: $0, missing groups become literal text (Kafka), $12 with one group = $1 + "2"
        ("RULE:^CN=(.*)$/$0|$1/", "CN=a", "CN=a|a"),
        ("RULE:^CN=(.*)$/$1$3/", "CN=a", "a$3"),
        ("RULE:^CN=(.*)$/$12/", "CN=a", "a2"),
        ("RULE:^CN=(.*)$/\\$1/", "CN=a", "$1"),
        # escaped slashes in pattern and replacement
        ("RULE:^CN=(.*?),OU=(.*?)$/$1\\/$2/", "CN=a,OU=b", "a/b"),
        ("RULE:^CN=a\\/b,.*$/slash/", "CN=a/b,O=x", "slash"),
        # Java regex syntax translated for Python
        ("RULE:^CN=(?<user>[^,]*).*$/${user}/", "CN=bob,O=x", "bob"),
        ("RULE:\\QCN=a.b\\E.*/literal/,DEFAULT", "CN=a.b,O=x", "literal"),
        ("RULE:\\QCN=a.b\\E.*/literal/,DEFAULT", "CN=aXb,O=x", "CN=aXb,O=x"),
        ("RULE:(?i)^cn=(.*?),.*$/$1/U", "CN=Carol,O=x", "CAROL"),
        # whitespace around items and empty items, as Kafka's splitter allows
        ("  RULE:^CN=(.*?),.*$/$1/L  ,   DEFAULT  ", "CN=Dave,O=x", "dave"),
        ("RULE:^nomatch$/x/,,DEFAULT", "CN=e", "CN=e"),
        # the dev PKI's rule
        ("RULE:^CN=([^,]+),OU=clients,O=kafka-envelope-proxy-dev$/$1/,DEFAULT", "CN=alice,OU=clients,O=kafka-envelope-proxy-dev", "alice"),
    ],
)
def test_mapping(rules: str | None, dn: str, expected: str) -> None:
    assert parse_mapping_rules(KEY, rules).map(dn) == expected


@pytest.mark.parametrize(
    ("rules", "dn"),
    [
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=x,OU=Other"),
        ("RULE:^CN=a$/a/,RULE:^CN=b$/b/", "CN=c"),
        (",", "CN=a"),  # a non-empty value with no rules rejects everyone, as in Kafka
    ],
)
def test_no_rule_applies(rules: str, dn: str) -> None:
    mapper = parse_mapping_rules(KEY, rules)
    with pytest.raises(NoMatchingRule, match="No rules apply to CN="):
        mapper.map(dn)


@pytest.mark.parametrize(
    ("rules", "reason"),
    [
        ("RULE:abc", "Invalid rule: `RULE:abc`, unmatched substring: `RULE:abc`"),
        ("RULE:a/b/x", "unmatched substring: `x`"),
        ("RULE:a/b/c/", "unmatched substring: `c/`"),
        ("RULE:a/b/LU", "unmatched substring: `U`"),
        ("DEFAULTX", "unmatched substring: `X`"),
        ("DEFAULT,RULE:^CN=(.*$/$1/", "is not a usable regular expression"),
        # Java-only regex syntax (Kafka accepts these; Python's re has no equivalent)
        ("RULE:\\p{L}+/x/", "is not a usable regular expression"),
        ("RULE:[a-z&&[^b]]*/x/", "Java-only syntax"),
        # replacements Java's Matcher rejects; Kafka only fails when such a rule matches a DN
        ("RULE:^CN=.*$/$1/", "No group 1"),
        ("RULE:^CN=(.*)$/a$/", "group index is missing"),
        ("RULE:^CN=(.*)$/$x/", "Illegal group reference"),
        ("RULE:^CN=(?<user>.*)$/${nobody}/", "No group with name {nobody}"),
    ],
)
def test_malformed_rules(rules: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_mapping_rules(KEY, rules)
    assert info.value.key == KEY
    assert info.value.value == rules
    assert reason in info.value.reason
    assert KEY in str(info.value) and repr(rules) in str(info.value)


def test_rules_print_like_kafka() -> None:
    mapper = parse_mapping_rules(KEY, "RULE:^CN=(.*?),.*$/$1/L, RULE:a/b/, DEFAULT")
    assert repr(mapper) == "SslPrincipalMapper(rules = [RULE:^CN=(.*?),.*$/$1/L, RULE:a/b, DEFAULT])"


_KEY = ec.generate_private_key(ec.SECP256R1())


def _cert(name: x509.Name) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuer")]))
        .public_key(_KEY.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(_KEY, hashes.SHA256())
    )


def _attrs(*pairs: tuple[x509.ObjectIdentifier, str]) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid, value) for oid, value in pairs])


N = NameOID


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # certificate order is C..CN; RFC 2253 prints the last RDN first
        (
            _attrs(
                (N.COUNTRY_NAME, "US"),
                (N.STATE_OR_PROVINCE_NAME, "CA"),
                (N.LOCALITY_NAME, "SF"),
                (N.ORGANIZATION_NAME, "Org"),
                (N.ORGANIZATIONAL_UNIT_NAME, "Unit"),
                (N.COMMON_NAME, "svc"),
            ),
            "CN=svc,OU=Unit,O=Org,L=SF,ST=CA,C=US",
        ),
        (
            _attrs((N.DOMAIN_COMPONENT, "com"), (N.DOMAIN_COMPONENT, "example"), (N.USER_ID, "jdoe"), (N.STREET_ADDRESS, "1 Main St")),
            "STREET=1 Main St,UID=jdoe,DC=example,DC=com",
        ),
        # Java escapes = and # everywhere, besides RFC 2253's specials
        (_attrs((N.COMMON_NAME, 'a,b+c=d<e>f#g;h"i\\j')), 'CN=a\\,b\\+c\\=d\\<e\\>f\\#g\\;h\\"i\\\\j'),
        (_attrs((N.COMMON_NAME, "#lead")), "CN=\\#lead"),
        # every leading/trailing space and CR is escaped; NUL becomes \00
        (_attrs((N.COMMON_NAME, "  two  ")), "CN=\\ \\ two\\ \\ "),
        (_attrs((N.COMMON_NAME, "\rcr\r")), "CN=\\\rcr\\\r"),
        (_attrs((N.COMMON_NAME, "nul\0x")), "CN=nul\\00x"),
        (_attrs((N.COMMON_NAME, "Jörg 漢字")), "CN=Jörg 漢字"),
        # attribute types without an RFC 2253 keyword: OID=#hex of the DER value
        (_attrs((N.COMMON_NAME, "x"), (N.EMAIL_ADDRESS, "a@b.c")), "1.2.840.113549.1.9.1=#16056140622e63,CN=x"),
        (_attrs((N.SERIAL_NUMBER, "1234"), (N.COMMON_NAME, "y")), "CN=y,2.5.4.5=#130431323334"),
        (_attrs((N.COMMON_NAME, "z"), (ObjectIdentifier("1.2.3.4.5"), "custom")), "1.2.3.4.5=#0c06637573746f6d,CN=z"),
        # multi-valued RDN
        (
            x509.Name(
                [
                    x509.RelativeDistinguishedName([x509.NameAttribute(N.COMMON_NAME, "a"), x509.NameAttribute(N.USER_ID, "b")]),
                    x509.RelativeDistinguishedName([x509.NameAttribute(N.ORGANIZATION_NAME, "o")]),
                ]
            ),
            "O=o,CN=a+UID=b",
        ),
    ],
)
def test_distinguished_name(name: x509.Name, expected: str) -> None:
    assert distinguished_name(_cert(name)) == expected


def test_principal_for_peer() -> None:
    mapper = parse_mapping_rules(KEY, "RULE:^CN=([^,]+),OU=clients,.*$/$1/L")
    cert = _cert(_attrs((N.ORGANIZATION_NAME, "o"), (N.ORGANIZATIONAL_UNIT_NAME, "clients"), (N.COMMON_NAME, "Erin")))
    assert principal_for_peer(cert.public_bytes(serialization.Encoding.DER), mapper) == "erin"
    assert principal_for_peer(None, mapper) == "ANONYMOUS"
    stranger = _cert(_attrs((N.COMMON_NAME, "stranger")))
    with pytest.raises(NoMatchingRule):
        principal_for_peer(stranger.public_bytes(serialization.Encoding.DER), mapper)
