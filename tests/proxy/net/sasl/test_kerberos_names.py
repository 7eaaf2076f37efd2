"""sasl.kerberos.principal.to.local.rules: Kafka's grammar and results (cases after Kafka's KerberosNameTest)."""

import pytest

from proxy.net.sasl.gssapi_mechanism import short_namer
from proxy.net.sasl.kerberos_names import BadFormatString, KerberosName, KerberosShortNamer, NoMatchingRule, split_rules
from proxy.properties import ConfigError, Properties


def short(rules: list[str] | None, name: str, realm: str = "REALM.COM") -> str:
    return KerberosShortNamer.from_rules(rules, realm).short_name(KerberosName.parse(name))


def test_names_are_split_into_primary_instance_and_realm() -> None:
    assert KerberosName.parse("alice/admin@EXAMPLE.COM") == KerberosName("alice", "admin", "EXAMPLE.COM")
    assert KerberosName.parse("alice@EXAMPLE.COM") == KerberosName("alice", None, "EXAMPLE.COM")
    assert KerberosName.parse("alice") == KerberosName("alice", None, None)
    assert str(KerberosName.parse("a/b@R")) == "a/b@R"
    with pytest.raises(ValueError, match="Malformed Kerberos name"):
        KerberosName.parse("a/b/c@R")


def test_default_maps_names_of_the_default_realm_to_their_first_component() -> None:
    assert short(None, "alice@REALM.COM") == "alice"
    assert short(["DEFAULT"], "user/host@REALM.COM") == "user"
    assert short(None, "simple") == "simple"  # a simple name is its own short name
    with pytest.raises(NoMatchingRule, match=r"No rules apply to alice@OTHER.COM, rules \[DEFAULT\]"):
        short(None, "alice@OTHER.COM")


def test_rules_with_formats_matches_and_substitutions() -> None:
    rules = ["RULE:[1:$1](App\\..*)s/App\\.(.*)/$1/g", "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g", "DEFAULT"]
    assert short(rules, "App.service-name/example.com@REALM.COM") == "service-name"
    assert short(rules, "App.service-name@REALM.COM") == "service-name"
    assert short(rules, "user/host@REALM.COM") == "user"
    # the first rule that applies wins; a rule whose match fails is skipped
    assert short(["RULE:[2:$1-$2@$0]([^@]*@EXAMPLE\\.TEST)s/@.*//", "DEFAULT"], "bob/admin@EXAMPLE.TEST", "EXAMPLE.TEST") == "bob-admin"
    assert short(["RULE:[2:$1-$2@$0]([^@]*@OTHER)s/@.*//", "DEFAULT"], "bob/admin@EXAMPLE.TEST", "EXAMPLE.TEST") == "bob"
    # without g only the first match is replaced
    assert short(["RULE:[1:$1](.*)s/a/x/"], "banana@R") == "bxnana"
    assert short(["RULE:[1:$1](.*)s/a/x/g"], "banana@R") == "bxnxnx"


def test_lower_and_upper_case_flags() -> None:
    rules = [
        "RULE:[1:$1]/L",
        "RULE:[2:$1](Test.*)s/ABC///L",
        "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L",
        "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/L",
        "RULE:[2:$1]/L",
        "DEFAULT",
    ]
    assert short(rules, "User@REALM.COM") == "user"
    assert short(rules, "TestABC/host@FOO.COM") == "test"
    assert short(rules, "ABC_User_ABC/host@FOO.COM") == "xyz_user_xyz"
    assert short(rules, "App.SERVICE-name/example.com@REALM.COM") == "service-name"
    assert short(rules, "User/root@REALM.COM") == "user"
    assert short(["RULE:[1:$1]/U"], "alice@R") == "ALICE"
    assert short(["RULE:[1:$1](.*)s/a/b/gU"], "alice@R") == "BLICE"  # the slash before the flag is optional


@pytest.mark.parametrize(
    "rule",
    [
        "RULE:[1:$1]/L/U",
        "RULE:[1:$1]/LU",
        "RULE:[1:$1]/L/",
        "RULE:[1:$1]/U/",
        "RULE:[1:$1]/g",
        "RULE:[1:$1] ",
        "RULE:[:$1]",
        "RULE:[1:$1](a)s/x/y",
        "DEFAULT/L",
        "NOT A RULE",
        "RULE:[1:$1]((unbalanced)",
    ],
)
def test_invalid_rules_are_refused(rule: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        KerberosShortNamer.from_rules([rule], "R")


def test_a_rule_giving_a_name_with_slash_or_at_is_an_error() -> None:
    with pytest.raises(NoMatchingRule, match=r"Non-simple name alice@R after auth_to_local rule RULE:\[1:\$1@\$0\]"):
        short(["RULE:[1:$1@$0]", "DEFAULT"], "alice@R", "R")


def test_bad_formats_and_replacements_fail_the_name_not_the_process() -> None:
    with pytest.raises(BadFormatString, match="index 3 from \\$3 is outside of the valid range 0 to 1"):
        short(["RULE:[1:$3]"], "alice@R")
    with pytest.raises(BadFormatString, match="bad format"):
        short(["RULE:[1:$x]"], "alice@R")
    with pytest.raises(BadFormatString, match="No group 2"):
        short(["RULE:[1:$1](.*)s/(a)/$2/"], "alice@R")
    # Java replacement syntax: $n is a group, \$ a literal dollar
    assert short(["RULE:[1:$1](.*)s/(al)(ice)/$2-$1/"], "alice@R") == "ice-al"
    assert short(["RULE:[1:$1](.*)s/ice/\\$/"], "alice@R") == "al$"


def test_the_list_is_split_as_kafka_splits_list_settings() -> None:
    assert split_rules(None) is None
    assert split_rules("  ") == []
    assert split_rules("RULE:[1:$1]/L , DEFAULT") == ["RULE:[1:$1]/L", "DEFAULT"]
    with pytest.raises(NoMatchingRule):  # set but empty: no rule applies to anything, as in Kafka
        KerberosShortNamer.from_rules([], "R").short_name(KerberosName.parse("alice@R"))


def test_configuration_errors_name_the_key_that_was_set() -> None:
    props = Properties({"listener.name.client.sasl.kerberos.principal.to.local.rules": "RULE:[1:$1]/X", "sasl.kerberos.principal.to.local.rules": "DEFAULT"})
    with pytest.raises(ConfigError, match=r"listener\.name\.client\.sasl\.kerberos\.principal\.to\.local\.rules.*Invalid rule"):
        short_namer(props, "CLIENT")
    assert str(short_namer(props, "OTHER")) == "DEFAULT"
    with pytest.raises(ConfigError, match=r"for configuration sasl\.kerberos\.principal\.to\.local\.rules"):
        short_namer(Properties({"sasl.kerberos.principal.to.local.rules": "RULE:[1:$1](a[)"}), "CLIENT")
