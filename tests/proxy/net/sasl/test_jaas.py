"""JAAS files and sasl.jaas.config values parsed as the JDK's ConfigFile and Kafka's JaasConfig parse them,
and Kafka's choice of login modules for a listener and mechanism."""

import os
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz.jaas_render import render_jaas_config, render_jaas_file
from proxy.net.sasl.jaas import (
    GSSAPI_LOGIN_MODULES,
    OAUTHBEARER_LOGIN_MODULE,
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    jaas_property_key,
    select_login,
    server_context_names,
)
from proxy.net.sasl.jaas_model import MAX_JAAS_BYTES, ControlFlag, JaasError, JaasFile, LoginContext, LoginModule
from proxy.net.sasl.jaas_parser import load_jaas_file, parse_jaas, parse_jaas_config, parse_jaas_file
from proxy.net.sasl.login_modules import plain_jaas
from proxy.net.sasl.system_properties import JAAS_FILE_KEY, jaas_file_location, java_system_properties
from proxy.properties import ConfigError

KRB5 = GSSAPI_LOGIN_MODULES[0]

# A broker's JAAS file as operators write them: Kafka's docs, Confluent's examples, a Kerberized cluster.
BROKER_JAAS = """\
// kafka_server_jaas.conf -- passed with -Djava.security.auth.login.config
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice-secret";

    org.apache.kafka.common.security.scram.ScramLoginModule required
        username="admin" password="admin-secret";   /* the broker's own SCRAM login */
};

/*
 * The CLIENT listener has users of its own: KafkaServer's are not merged in.
 */
client.KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
        user_carol="carol // not a comment"
        user_dave="say \\"hi\\"\\tthere\\\\";
};

sasl_ssl.KafkaServer {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    storeKey=true
    keyTab="/etc/security/keytabs/kafka_server.keytab"
    principal="kafka/kafka1.hostname.com@EXAMPLE.COM";
};

external.KafkaServer {
    org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule Required
        unsecuredLoginStringClaim_sub="thePrincipalName";
};

Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="kafka" password="kafka-secret";
};
"""


def parse(text: str, system_properties: dict[str, str] | None = None) -> dict[str, LoginContext]:
    return dict(parse_jaas_file(text, source="kafka_server_jaas.conf", system_properties=system_properties).contexts)


def error_of(text: str) -> JaasError:
    with pytest.raises(JaasError) as caught:
        parse_jaas_file(text, source="jaas.conf")
    return caught.value


# --------------------------------------------------------------------------- the file form


def test_a_broker_jaas_file() -> None:
    contexts = parse(BROKER_JAAS)
    assert list(contexts) == ["KafkaServer", "client.KafkaServer", "sasl_ssl.KafkaServer", "external.KafkaServer", "Client"]
    plain, scram = contexts["KafkaServer"].modules
    assert plain == LoginModule(
        PLAIN_LOGIN_MODULE,
        ControlFlag.REQUIRED,
        {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"},
    )
    assert (plain.line, scram.line, contexts["KafkaServer"].line) == (3, 9, 2)
    assert scram.module == SCRAM_LOGIN_MODULE and dict(scram.options) == {"username": "admin", "password": "admin-secret"}
    assert contexts["client.KafkaServer"].modules[0].users == {"carol": "carol // not a comment", "dave": 'say "hi"\tthere\\'}
    krb5 = contexts["sasl_ssl.KafkaServer"].modules[0]
    assert krb5.module == KRB5
    assert dict(krb5.options) == {
        "useKeyTab": "true",
        "storeKey": "true",
        "keyTab": "/etc/security/keytabs/kafka_server.keytab",
        "principal": "kafka/kafka1.hostname.com@EXAMPLE.COM",
    }
    oauth = contexts["external.KafkaServer"].modules[0]
    assert (oauth.module, oauth.flag, dict(oauth.options)) == (OAUTHBEARER_LOGIN_MODULE, ControlFlag.REQUIRED, {"unsecuredLoginStringClaim_sub": "thePrincipalName"})


def test_everything_on_one_line_and_odd_whitespace() -> None:
    text = 'KafkaServer{X required a="1"b=c;Y optional;};\x0b\rOther\x00{\r\n\tZ SUFFICIENT\r\nk\r\n=\r\n"v";}\r\n;'
    contexts = parse(text)
    assert [(m.module, m.flag, dict(m.options)) for m in contexts["KafkaServer"].modules] == [
        ("X", ControlFlag.REQUIRED, {"a": "1", "b": "c"}),
        ("Y", ControlFlag.OPTIONAL, {}),
    ]
    assert contexts["Other"].modules == (LoginModule("Z", ControlFlag.SUFFICIENT, {"k": "v"}),)
    assert contexts["Other"].modules[0].line == 3  # \r\n, a lone \r and \n each end one line


@pytest.mark.parametrize("flag", ["required", "REQUIRED", "Requisite", "sUfFiCiEnT", "optional", '"required"'])
def test_control_flags_are_case_insensitive_and_may_be_quoted(flag: str) -> None:
    module = parse(f"K {{ X {flag}; }};")["K"].modules[0]
    assert module.flag.value == flag.strip('"').lower()


def test_comments_and_quotes() -> None:
    text = """K { // a comment with "quotes" and ; and }
        X required /* block } ; */ url="http://idp.example.com/realms/kafka" // after
        path="C:\\\\keys\\\\kafka.keytab"
        empty=""
        octal="\\101\\0\\377\\400" unknown="\\q\\$"
        controls="\\a\\b\\f\\n\\r\\t\\v"
        multi="one\\
two";
    };"""
    options = parse(text)["K"].modules[0].options
    assert options == {
        "url": "http://idp.example.com/realms/kafka",
        "path": "C:\\keys\\kafka.keytab",
        "empty": "",
        "octal": "A\x00\xff\x200",  # \400 is \40 then '0': three octal digits only when the first is 0-3
        "unknown": "q$",
        "controls": "\x07\b\f\n\r\t\x0b",
        "multi": "one\ntwo",  # a backslash before a line break keeps the line break
    }


def test_unquoted_words_take_javas_word_characters() -> None:
    options = parse("K { a.b-c$d_e* required k=v.1-2$_* k2=é€x; };")["K"].modules[0]
    assert options.module == "a.b-c$d_e*"
    assert dict(options.options) == {"k": "v.1-2$_*", "k2": "é€x"}


def test_a_repeated_option_keeps_the_last_value_and_an_empty_entry_is_absent() -> None:
    parsed = parse_jaas_file("KafkaServer { X required a=one a=two; };\nclient.KafkaServer { };")
    assert parsed.contexts["KafkaServer"].modules[0].options == {"a": "two"}
    assert parsed.contexts["client.KafkaServer"].modules == ()
    assert parsed.context("client.KafkaServer") is None


def test_system_properties_expand_in_option_values() -> None:
    text = 'K { X required keyTab="${user.home}${/}kafka.keytab" literal="${{not.expanded}}" open="${no-close" plain="${kafka.dir}"; };'
    options = parse(text, system_properties={"user.home": "/home/kafka", "kafka.dir": "/etc/kafka"})["K"].modules[0].options
    assert options == {"keyTab": "/home/kafka/kafka.keytab", "literal": "${{not.expanded}}", "open": "${no-close", "plain": "/etc/kafka"}


def test_a_byte_order_mark_is_skipped() -> None:
    assert list(parse("\ufeffKafkaServer { X required; };")) == ["KafkaServer"]


# Each bad file: the exact line, column and entry, and why; values never appear.
@pytest.mark.parametrize(
    ("text", "line", "column", "entry", "reason"),
    [
        ("KafkaServer {\n  X required\n  user_a=\"s3cret\"\n}\n", 4, 1, "KafkaServer", "expected an option name or ';' ending the options of X, found '}'"),
        ("KafkaServer {\n  X required;\n}\n", 4, 1, "KafkaServer", "expected ';' after the '}' that closes the entry, found the end of the file"),
        ("KafkaServer {\n  X requird user_a=\"s3cret\";\n};", 2, 5, "KafkaServer", "invalid control flag for X: must be required, requisite, sufficient or optional"),
        ("KafkaServer {\n  X;\n};", 2, 4, "KafkaServer", "expected a control flag (required, requisite, sufficient or optional) after X, found ';'"),
        ("KafkaServer {\n  X required\n    port=9092;\n};", 3, 10, "KafkaServer", "expected a value for option port of X, found a name or value starting with a digit, '.' or '-', which Java's JAAS parser refuses unless quoted"),
        ("KafkaServer {\n  X required password='s3cret';\n};", 2, 23, "KafkaServer", "expected a value for option password of X, found a value in single quotes, which Java's JAAS file parser refuses: use double quotes"),
        ("KafkaServer {\n  X required password=\"s3cret\n  ;\n};", 2, 30, "KafkaServer", "a quoted value is not closed before the end of the line (Java would end it there; close the quote)"),
        ("KafkaServer {\n  X required password=\"s3cret", 2, 30, "KafkaServer", "a quoted value is not closed before the end of the text (Java would end it there; close the quote)"),
        ("KafkaServer {\n  X required password s3cret;\n};", 2, 23, "KafkaServer", "expected '=' after an option name of X, found a name"),
        ("KafkaServer {\n  X required user@host=\"s3cret\";\n};", 2, 18, "KafkaServer", "expected '=' after an option name of X, found '@', which must be quoted"),
        ("KafkaServer\n  X required;\n};", 2, 3, "KafkaServer", "expected '{' after the entry name, found a name"),
        ("KafkaServer { X required; };\n\n// again\nKafkaServer { Y required; };", 4, 1, "KafkaServer", "the entry is defined twice (first on line 1); Java refuses that"),
        ("KafkaServer { X required; };\n};", 2, 1, None, "expected an entry name such as KafkaServer, found '}'"),
        ("# not a comment\nKafkaServer { X required; };", 1, 1, None, "expected an entry name such as KafkaServer, found '#', which must be quoted"),
        ('KafkaServer { X required k="${missing}"; };', 1, 28, "KafkaServer", "option k of X names a Java system property that is not set"),
    ],
)
def test_errors_name_file_line_column_entry_and_reason(text: str, line: int, column: int, entry: str | None, reason: str) -> None:
    error = error_of(text)
    assert (error.file, error.line, error.column, error.entry, error.reason) == ("jaas.conf", line, column, entry, reason)
    where = f"jaas.conf, line {line}, column {column}" + (f", entry {entry}" if entry else "")
    assert str(error) == f"{where}: {reason}"
    assert "s3cret" not in str(error)
    assert isinstance(error, ConfigError) and error.value == "[hidden]"


def test_an_unquoted_path_is_a_comment_and_the_error_says_so() -> None:
    text = 'KafkaServer {\n  X required\n  keyTab=/etc/kafka.keytab\n  principal="kafka/h@R";\n};'
    error = error_of(text)
    assert (error.line, error.column) == (4, 12)
    assert error.reason == (
        "expected an option name or ';' ending the options of X, found '=' "
        "(the '/' on line 3 starts a comment in JAAS syntax, so the rest of that line is ignored: quote values that contain '/')"
    )


def test_a_lone_slash_hides_the_rest_of_its_line_and_a_line_break_right_after_it_as_in_java() -> None:
    # StreamTokenizer reads the character after a lone '/' before it skips to the end of the line.
    assert parse("K { X required; / Y required;\n};")["K"].modules == (LoginModule("X"),)
    error = error_of("K { X required; /\n Y required; };")
    assert (error.line, error.column, error.reason) == (
        2,
        16,
        "expected a login module class name or '}' ending the entry, found the end of the file "
        "(the '/' on line 1 starts a comment in JAAS syntax, so the rest of that line is ignored: quote values that contain '/')",
    )


def test_an_unclosed_block_comment_is_named_at_the_end() -> None:
    error = error_of("KafkaServer {\n  X required /* who closes this?\n  a=b;\n};\n")
    assert (error.line, error.column) == (5, 1)
    assert error.reason.endswith("(the '/*' comment opened on line 2 is never closed)")
    # At the top level Java just stops reading: the entries before it stand.
    assert list(parse("KafkaServer { X required; };\n/* the rest is off")) == ["KafkaServer"]


def test_long_or_unprintable_names_are_cut_in_messages() -> None:
    error = error_of("K { " + "M" * 500 + " ; };")
    assert "M" * 80 + "..." in error.reason and "M" * 81 not in error.reason
    error = error_of('K { "a\\nb" ; };')
    assert "after 'a\\nb', found ';'" in error.reason


def test_the_size_limit() -> None:
    big = "K { X required a=b; };\n" + " " * MAX_JAAS_BYTES
    with pytest.raises(JaasError, match=r"larger than 1048576 bytes"):
        parse_jaas_file(big)
    with pytest.raises(JaasError, match=r"larger than 1048576 bytes"):
        parse_jaas_config("X required a=b; " + "é" * (MAX_JAAS_BYTES // 2))  # the limit counts UTF-8 bytes


# --------------------------------------------------------------------------- the property form


def test_the_property_form_as_kafkas_jaasconfig_reads_it() -> None:
    (module,) = parse_jaas_config(
        "org.apache.kafka.common.security.plain.PlainLoginModule required username='admin' password=\"admin-secret\" "
        "user_admin=admin-secret user_x=a:b@c{d}#e /* comment */ // to the end of the line\n;"
    )
    assert module.module == PLAIN_LOGIN_MODULE and module.flag is ControlFlag.REQUIRED
    assert module.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_x": "a:b@c{d}#e"}
    assert module.users == {"admin": "admin-secret", "x": "a:b@c{d}#e"}
    # digits first are fine here (no number parsing), unlike in a file
    assert parse_jaas_config("M optional refresh=1000 ratio=.5 neg=-1;")[0].options == {"refresh": "1000", "ratio": ".5", "neg": "-1"}
    assert len(parse_jaas_config("A required; B sufficient x=y;")) == 2


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "names no login module (expected `<LoginModule> <flag> key=value ...;`)"),
        ("  // only a comment", "names no login module (expected `<LoginModule> <flag> key=value ...;`)"),
        ("X", "no control flag after X (required, requisite, sufficient or optional)"),
        ("X required password=\"s3cret\"", "the options of X are not ended by ';'"),
        ("X required user_a=\"s3cret\" broken", "expected '=' after an option name of X, found the end of the value"),
        ("X required password=;", "no value for option password of X, found ';'"),
        (
            "KafkaServer { X required; };",
            "invalid control flag for KafkaServer: must be required, requisite, sufficient or optional; "
            "the property holds one `<LoginModule> <flag> key=value ...;` without an entry name or braces",
        ),
        ("X required url=http://idp/token;", "the options of X are not ended by ';' (the '/' on line 1 starts a comment in JAAS syntax, so the rest of that line is ignored: quote values that contain '/')"),
    ],
)
def test_property_errors(text: str, reason: str) -> None:
    key = "listener.name.client.plain.sasl.jaas.config"
    with pytest.raises(JaasError) as caught:
        parse_jaas_config(text, key=key)
    assert caught.value.reason == reason
    assert caught.value.key == key and str(caught.value).startswith(key)
    assert "s3cret" not in str(caught.value)


def test_parse_jaas_takes_exactly_one_module() -> None:
    assert parse_jaas("k", "X required a=b;").options == {"a": "b"}
    with pytest.raises(ConfigError, match=r"holds 2 login modules; Kafka's sasl.jaas.config takes exactly 1"):
        parse_jaas("k", "X required; Y required;")


# --------------------------------------------------------------------------- round trips

_names = st.text(string.ascii_letters + "$_*", min_size=1, max_size=3).flatmap(
    lambda head: st.text(string.ascii_letters + string.digits + "._-$*", max_size=12).map(lambda tail: head + tail)
)
_values = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
_modules = st.builds(
    LoginModule,
    _names,
    st.sampled_from(list(ControlFlag)),
    st.dictionaries(_names, _values, max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_modules, min_size=1, max_size=4))
def test_rendered_properties_parse_back(modules: list[LoginModule]) -> None:
    assert list(parse_jaas_config(render_jaas_config(modules))) == modules


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        _names,
        st.lists(_modules.filter(lambda m: all(v and "${" not in v for v in m.options.values())), max_size=3),
        min_size=1,
        max_size=4,
    )
)
def test_rendered_files_parse_back(entries: dict[str, list[LoginModule]]) -> None:
    contexts = [LoginContext(name, tuple(modules)) for name, modules in entries.items()]
    assert list(parse_jaas_file(render_jaas_file(contexts)).contexts.values()) == contexts


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('KafkaServer{};=" \'\\/*\n\r${}XY01-.é\x00\ufeff')), max_size=80))
def test_any_text_is_parsed_or_refused_with_a_jaas_error(text: str) -> None:
    for parse_one in (parse_jaas_file, parse_jaas_config):
        try:
            parse_one(text)
        except JaasError as error:
            assert error.reason and (error.line is None or error.line >= 1)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_unicode_is_parsed_or_refused_with_a_jaas_error(text: str) -> None:
    for parse_one in (parse_jaas_file, parse_jaas_config):
        try:
            parse_one(text)
        except JaasError:
            pass


# --------------------------------------------------------------------------- Kafka's lookup


@pytest.fixture
def broker_file() -> JaasFile:
    return parse_jaas_file(BROKER_JAAS, source="/etc/kafka/kafka_server_jaas.conf")


def test_names_kafka_looks_up() -> None:
    assert jaas_property_key("CLIENT", "SCRAM-SHA-256") == "listener.name.client.scram-sha-256.sasl.jaas.config"
    assert server_context_names("SASL_SSL") == ("sasl_ssl.KafkaServer", "KafkaServer")


def test_the_listener_property_wins_over_the_file(broker_file: JaasFile) -> None:
    props = {"listener.name.client.plain.sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} required user_erin="erin-secret";'}
    login = select_login(props, "CLIENT", "PLAIN", broker_file)
    assert login.source == "listener.name.client.plain.sasl.jaas.config" == login.key
    assert login.users == {"erin": "erin-secret"}


def test_the_listener_entry_wins_and_entries_are_never_merged(broker_file: JaasFile) -> None:
    login = select_login({}, "CLIENT", "PLAIN", broker_file, file_key=JAAS_FILE_KEY)
    assert login.source == "/etc/kafka/kafka_server_jaas.conf: entry client.KafkaServer"
    assert login.key == JAAS_FILE_KEY
    assert login.users == {"carol": "carol // not a comment", "dave": 'say "hi"\tthere\\'}  # no admin, no alice


def test_kafkaserver_is_the_fallback(broker_file: JaasFile) -> None:
    login = select_login({}, "BROKER", "PLAIN", broker_file)
    assert login.source == "/etc/kafka/kafka_server_jaas.conf: entry KafkaServer"
    assert login.users == {"admin": "admin-secret", "alice": "alice-secret"}
    assert login.option("username") == "admin"
    scram = select_login({}, "BROKER", "SCRAM-SHA-512", broker_file)
    assert scram.module is not None and scram.module.module == SCRAM_LOGIN_MODULE
    assert scram.option("password") == "admin-secret"


def test_the_mechanisms_module_is_required(broker_file: JaasFile) -> None:
    with pytest.raises(JaasError) as caught:
        select_login({}, "SASL_SSL", "PLAIN", broker_file)
    assert str(caught.value) == (
        "/etc/kafka/kafka_server_jaas.conf: entry sasl_ssl.KafkaServer: PLAIN needs the login module "
        f"{PLAIN_LOGIN_MODULE}, found {KRB5}"
    )
    assert select_login({}, "SASL_SSL", "GSSAPI", broker_file).option("principal") == "kafka/kafka1.hostname.com@EXAMPLE.COM"
    assert select_login({}, "EXTERNAL", "OAUTHBEARER", broker_file).module is not None
    props = {"listener.name.client.scram-sha-256.sasl.jaas.config": f"{PLAIN_LOGIN_MODULE} required;"}
    with pytest.raises(JaasError, match=r"SCRAM-SHA-256 needs the login module org.apache.kafka.common.security.scram.ScramLoginModule"):
        select_login(props, "CLIENT", "SCRAM-SHA-256")


def test_a_shared_entry_without_scramloginmodule_serves_scram_on_the_server_side_only() -> None:
    parsed = parse_jaas_file(f'KafkaServer {{ {PLAIN_LOGIN_MODULE} required user_a="b"; }};', source="j.conf")
    login = select_login({}, "CLIENT", "SCRAM-SHA-256", parsed)
    assert login.module is None and login.source == "j.conf: entry KafkaServer"
    with pytest.raises(JaasError, match=r"SCRAM-SHA-256 needs the login module"):
        select_login({}, "CONTROLLER", "SCRAM-SHA-256", parsed, role="client")


def test_oauthbearer_takes_exactly_one_module() -> None:
    parsed = parse_jaas_file(f"KafkaServer {{ {OAUTHBEARER_LOGIN_MODULE} required; {PLAIN_LOGIN_MODULE} required; }};", source="j.conf")
    with pytest.raises(JaasError, match=r"OAUTHBEARER takes exactly 1 login module, found 2"):
        select_login({}, "CLIENT", "OAUTHBEARER", parsed)


def test_the_property_takes_exactly_one_module_and_may_not_be_empty() -> None:
    key = "listener.name.client.plain.sasl.jaas.config"
    with pytest.raises(JaasError, match=r"holds 2 login modules"):
        select_login({key: f"{PLAIN_LOGIN_MODULE} required; {PLAIN_LOGIN_MODULE} required;"}, "CLIENT", "PLAIN")
    with pytest.raises(JaasError, match=r"names no login module"):
        select_login({key: "  "}, "CLIENT", "PLAIN")


def test_nothing_found() -> None:
    with pytest.raises(JaasError) as caught:
        select_login({}, "CLIENT", "PLAIN")
    assert caught.value.key == "listener.name.client.plain.sasl.jaas.config"
    assert "neither listener.name.client.plain.sasl.jaas.config nor a JAAS file (jaas.config.file, or -Djava.security.auth.login.config= in KAFKA_OPTS)" in str(caught.value)
    parsed = parse_jaas_file("Client { X required; };\nclient.KafkaServer { };", source="j.conf")
    with pytest.raises(JaasError) as caught:
        select_login({}, "CLIENT", "PLAIN", parsed, file_key="KAFKA_OPTS")
    assert str(caught.value) == (
        "j.conf: listener CLIENT uses PLAIN but listener.name.client.plain.sasl.jaas.config is not set and the JAAS file has "
        "neither an entry client.KafkaServer nor KafkaServer with a login module"
    )
    assert caught.value.key == "KAFKA_OPTS"


def test_an_unprefixed_sasl_jaas_config_is_ignored_as_kafka_ignores_it(broker_file: JaasFile) -> None:
    login = select_login({"sasl.jaas.config": f"{PLAIN_LOGIN_MODULE} required;"}, "CLIENT", "PLAIN", broker_file)
    assert login.source.endswith("entry client.KafkaServer")
    assert login.notes == ("sasl.jaas.config is ignored for a listener, as Kafka ignores it: set listener.name.client.plain.sasl.jaas.config",)


# --------------------------------------------------------------------------- where the file is


def path_of(environ: dict[str, str]) -> str:
    found = jaas_file_location({}, environ)
    assert found is not None
    return found[0]


def test_the_file_from_kafka_opts() -> None:
    opts = "-Xmx1G -Dfoo=bar -Djava.security.auth.login.config=/etc/kafka/first.conf -Djava.security.auth.login.config='/etc/kafka/my jaas.conf'"
    assert jaas_file_location({}, {"KAFKA_OPTS": opts}) == ("/etc/kafka/my jaas.conf", "KAFKA_OPTS (-Djava.security.auth.login.config)")
    assert jaas_file_location({}, {"KAFKA_OPTS": "-Djava.security.auth.login.config==/etc/kafka/only.conf"}) == (
        "/etc/kafka/only.conf",
        "KAFKA_OPTS (-Djava.security.auth.login.config)",
    )
    assert path_of({"KAFKA_OPTS": "-Djava.security.auth.login.config=file:///etc/kafka/a%20b.conf"}) == "/etc/kafka/a b.conf"
    env = {"KAFKA_OPTS": "-Dkafka.home=/opt/kafka -Djava.security.auth.login.config=${kafka.home}/config/jaas.conf", "HOME": "/home/k"}
    assert path_of(env) == "/opt/kafka/config/jaas.conf"
    assert java_system_properties(env)["user.home"] == "/home/k"
    assert jaas_file_location({}, {"KAFKA_OPTS": "-Xmx1G"}) is None
    assert jaas_file_location({}, {}) is None


def test_the_config_key_wins_over_kafka_opts() -> None:
    env = {"KAFKA_OPTS": "-Djava.security.auth.login.config=/etc/kafka/env.conf"}
    assert jaas_file_location({JAAS_FILE_KEY: " /etc/proxy/jaas.conf "}, env) == ("/etc/proxy/jaas.conf", JAAS_FILE_KEY)


@pytest.mark.parametrize(
    ("opts", "reason"),
    [
        ("-Djava.security.auth.login.config='/etc/unclosed", "cannot split KAFKA_OPTS like a shell command line: No closing quotation"),
        ("-Djava.security.auth.login.config=https://idp/jaas.conf", "-Djava.security.auth.login.config is a https URL; the proxy reads only files"),
        ("-Djava.security.auth.login.config=file://other/jaas.conf", "-Djava.security.auth.login.config is a file URL on another host; the proxy reads only local files"),
        ("-Djava.security.auth.login.config=${nope}/j.conf", "-Djava.security.auth.login.config names a Java system property that is not set"),
        ("-Djava.security.auth.login.config=", "-Djava.security.auth.login.config names no file"),
    ],
)
def test_bad_kafka_opts(opts: str, reason: str) -> None:
    with pytest.raises(JaasError) as caught:
        jaas_file_location({}, {"KAFKA_OPTS": opts})
    assert caught.value.reason == reason and caught.value.key == "KAFKA_OPTS"


def test_load_jaas_file(tmp_path: Path) -> None:
    path = tmp_path / "jaas.conf"
    path.write_bytes(b"KafkaServer { X required user_a=\"caf\xe9\"; };")  # Latin-1, as the JVM's reader: replaced
    assert load_jaas_file(str(path)).contexts["KafkaServer"].modules[0].options == {"user_a": "caf\ufffd"}
    with pytest.raises(JaasError, match=r"cannot read the JAAS file: No such file or directory"):
        load_jaas_file(str(tmp_path / "missing.conf"), key=JAAS_FILE_KEY)
    with pytest.raises(JaasError, match=r"not a regular file"):
        load_jaas_file(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(JaasError, match=r"not a regular file"):
        load_jaas_file(str(fifo))  # never blocks on a pipe
    path.write_bytes(b" " * (MAX_JAAS_BYTES + 1))
    with pytest.raises(JaasError, match=r"larger than 1048576 bytes"):
        load_jaas_file(str(path))
    path.write_text('KafkaServer {\n  X required\n  a="b";\n}')
    with pytest.raises(JaasError) as caught:
        load_jaas_file(str(path), key=JAAS_FILE_KEY)
    assert str(caught.value) == f"{path}, line 4, column 2, entry KafkaServer: expected ';' after the '}}' that closes the entry, found the end of the file"
    assert caught.value.key == JAAS_FILE_KEY


@pytest.mark.parametrize(
    "options",
    [{"username": "alice", "password": "alice-secret"}, {"user_admin": "a b;c", "user_proxy": "p=1"}, {}],
)
def test_plain_jaas_reads_back_as_the_plain_module_with_its_options(options: dict[str, str]) -> None:
    (module,) = parse_jaas_config(plain_jaas(**options))
    assert module == LoginModule(PLAIN_LOGIN_MODULE, ControlFlag.REQUIRED, options)
