"""AclAuthorizer against Kafka's StandardAuthorizer semantics."""

import ipaddress

import pytest

from authz import (
    AclAuthorizer,
    AclBinding,
    AclBindingFilter,
    Action,
    Authorizer,
    Decision,
    Operation,
    PatternType,
    PermissionType,
    RequestContext,
    ResourceType,
)
from envelope import Principal

A = Decision.ALLOWED
D = Decision.DENIED
Op = Operation
RT = ResourceType
PT = PatternType
ALLOW = PermissionType.ALLOW
DENY = PermissionType.DENY


def ctx(principal: str = "User:alice", host: str = "127.0.0.1") -> RequestContext:
    return RequestContext(
        principal=Principal.parse(principal),
        client_address=ipaddress.ip_address(host),
        listener="CLIENT",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
    )


def acl(
    name: str = "orders",
    op: Operation = Op.READ,
    perm: PermissionType = ALLOW,
    principal: str = "User:alice",
    host: str = "*",
    pattern: PatternType = PT.LITERAL,
    rtype: ResourceType = RT.TOPIC,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def decide(
    authorizer: AclAuthorizer,
    op: Operation,
    name: str = "orders",
    rtype: ResourceType = RT.TOPIC,
    principal: str = "User:alice",
    host: str = "127.0.0.1",
) -> Decision:
    (decision,) = authorizer.authorize(ctx(principal, host), [Action(op, rtype, name)])
    return decision


def test_is_an_authorizer() -> None:
    assert isinstance(AclAuthorizer(), Authorizer)


def test_one_decision_per_action_in_order() -> None:
    authz = AclAuthorizer(acls=[acl("orders", Op.READ)])
    actions = [Action(Op.READ, RT.TOPIC, "orders"), Action(Op.READ, RT.TOPIC, "other"), Action(Op.WRITE, RT.TOPIC, "orders")]
    assert authz.authorize(ctx(), actions) == [A, D, D]
    assert authz.authorize(ctx(), []) == []


# --- super users, no ACL --------------------------------------------------------------------------


def test_super_user_allowed_everything_even_with_deny() -> None:
    authz = AclAuthorizer(super_users=["User:admin"], acls=[acl("orders", Op.ALL, DENY, principal="User:*")])
    assert decide(authz, Op.DELETE, principal="User:admin") is A
    assert decide(authz, Op.CLUSTER_ACTION, "kafka-cluster", RT.CLUSTER, principal="User:admin") is A
    assert decide(authz, Op.DELETE, principal="User:alice") is D


def test_super_user_match_is_by_type_and_name() -> None:
    authz = AclAuthorizer(super_users=["User:admin"])
    assert decide(authz, Op.READ, principal="Group:admin") is D
    assert decide(authz, Op.READ, principal="User:admin2") is D


@pytest.mark.parametrize(("allow_everyone", "expected"), [(False, D), (True, A)])
def test_no_acl_for_resource(allow_everyone: bool, expected: Decision) -> None:
    # ACLs on other resources do not count as "an ACL for this resource"
    authz = AclAuthorizer(
        allow_everyone_if_no_acl_found=allow_everyone,
        acls=[acl("payments", Op.READ), acl("orders", Op.READ, rtype=RT.GROUP)],
    )
    assert decide(authz, Op.READ, "orders") is expected
    assert decide(authz, Op.WRITE, "orders") is expected


def test_allow_everyone_does_not_apply_when_an_acl_exists() -> None:
    # An ACL for bob exists on the resource: alice is denied even with allow_everyone_if_no_acl_found.
    authz = AclAuthorizer(allow_everyone_if_no_acl_found=True, acls=[acl("orders", Op.READ, principal="User:bob")])
    assert decide(authz, Op.READ, principal="User:bob") is A
    assert decide(authz, Op.READ, principal="User:alice") is D


# --- allow / deny ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("acls", "op", "expected"),
    [
        ([acl(op=Op.READ)], Op.READ, A),
        ([acl(op=Op.READ)], Op.WRITE, D),
        ([acl(op=Op.READ), acl(op=Op.READ, perm=DENY)], Op.READ, D),  # DENY overrides ALLOW
        ([acl(op=Op.ALL), acl(op=Op.WRITE, perm=DENY)], Op.WRITE, D),
        ([acl(op=Op.ALL), acl(op=Op.WRITE, perm=DENY)], Op.READ, A),  # deny is per operation
        ([acl(op=Op.READ), acl(op=Op.ALL, perm=DENY)], Op.READ, D),  # DENY ALL denies everything
        ([acl(op=Op.READ, perm=DENY)], Op.DESCRIBE, D),  # nothing allows DESCRIBE
        ([acl(op=Op.DESCRIBE), acl(op=Op.READ, perm=DENY)], Op.DESCRIBE, A),  # deny is not implied
        ([acl(op=Op.READ), acl(op=Op.READ, perm=DENY, principal="User:bob")], Op.READ, A),  # someone else's deny
        ([acl(op=Op.READ), acl(op=Op.READ, perm=DENY, principal="User:*")], Op.READ, D),  # wildcard deny
        ([acl(op=Op.READ), acl(op=Op.READ, perm=DENY, host="10.0.0.9")], Op.READ, A),  # deny from another host
    ],
)
def test_allow_deny_table(acls: list[AclBinding], op: Operation, expected: Decision) -> None:
    assert decide(AclAuthorizer(acls=acls), op) is expected


@pytest.mark.parametrize(
    "op",
    [o for o in Operation if o not in (Op.UNKNOWN, Op.ANY, Op.ALL)],
)
def test_all_allows_every_operation(op: Operation) -> None:
    authz = AclAuthorizer(acls=[acl(op=Op.ALL)])
    assert decide(authz, op) is A


# --- implied operations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("granted", "implies_describe"),
    [
        (Op.DESCRIBE, True),
        (Op.READ, True),
        (Op.WRITE, True),
        (Op.DELETE, True),
        (Op.ALTER, True),
        (Op.CREATE, False),
        (Op.DESCRIBE_CONFIGS, False),
        (Op.ALTER_CONFIGS, False),
    ],
)
def test_implied_describe(granted: Operation, implies_describe: bool) -> None:
    authz = AclAuthorizer(acls=[acl(op=granted)])
    assert decide(authz, Op.DESCRIBE) is (A if implies_describe else D)


@pytest.mark.parametrize(
    ("granted", "expected"),
    [(Op.ALTER_CONFIGS, A), (Op.DESCRIBE_CONFIGS, A), (Op.ALTER, D), (Op.DESCRIBE, D), (Op.READ, D)],
)
def test_implied_describe_configs(granted: Operation, expected: Decision) -> None:
    assert decide(AclAuthorizer(acls=[acl(op=granted)]), Op.DESCRIBE_CONFIGS) is expected


def test_implication_is_one_way() -> None:
    authz = AclAuthorizer(acls=[acl(op=Op.DESCRIBE), acl(op=Op.DESCRIBE_CONFIGS)])
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALTER_CONFIGS):
        assert decide(authz, op) is D


# --- wildcards, hosts, prefixes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("binding", "name", "principal", "expected"),
    [
        (acl(name="*"), "orders", "User:alice", A),
        (acl(name="*"), "anything-else", "User:alice", A),
        (acl(name="*"), "orders", "User:bob", D),
        (acl(principal="User:*"), "orders", "User:bob", A),
        (acl(principal="User:*"), "payments", "User:bob", D),
        (acl(name="*", principal="User:*"), "x", "User:carol", A),
        (acl(name="ord"), "orders", "User:alice", D),  # literal is exact
        (acl(name="orders"), "orders2", "User:alice", D),
    ],
)
def test_wildcards(binding: AclBinding, name: str, principal: str, expected: Decision) -> None:
    assert decide(AclAuthorizer(acls=[binding]), Op.READ, name, principal=principal) is expected


def test_wildcard_resource_is_per_type() -> None:
    authz = AclAuthorizer(acls=[acl(name="*", rtype=RT.GROUP)])
    assert decide(authz, Op.READ, "g1", RT.GROUP) is A
    assert decide(authz, Op.READ, "g1", RT.TOPIC) is D


@pytest.mark.parametrize(
    ("acl_host", "client", "expected"),
    [
        ("*", "127.0.0.1", A),
        ("*", "::1", A),
        ("*", "2001:db8::7", A),
        ("127.0.0.1", "127.0.0.1", A),
        ("127.0.0.1", "127.0.0.7", D),
        ("127.0.0.7", "127.0.0.7", A),
        ("127.0.0.7", "127.0.0.1", D),
        # Kafka compares the ACL's text with Java's getHostAddress(): IPv6 in full, never compressed.
        ("::1", "::1", D),
        ("0:0:0:0:0:0:0:1", "::1", A),
        ("0:0:0:0:0:0:0:1", "127.0.0.1", D),
        ("127.0.0.1", "::1", D),
        ("127.0.0.1", "::ffff:127.0.0.1", A),  # an IPv4-mapped address is an Inet4Address to Java
        ("2001:db8::7", "2001:db8::7", D),
        ("2001:db8:0:0:0:0:0:7", "2001:db8::7", A),
        ("2001:db8:0:0:0:0:0:7", "2001:db8::8", D),
    ],
)
def test_host_matching(acl_host: str, client: str, expected: Decision) -> None:
    authz = AclAuthorizer(acls=[acl(host=acl_host)])
    assert decide(authz, Op.READ, host=client) is expected


def test_full_form_ipv6_acl_host_matches() -> None:
    authz = AclAuthorizer(acls=[acl(host="0:0:0:0:0:0:0:1")])
    assert decide(authz, Op.READ, host="::1") is A


def test_exact_host_deny_only_hits_that_host() -> None:
    authz = AclAuthorizer(acls=[acl(), acl(perm=DENY, host="127.0.0.7")])
    assert decide(authz, Op.READ, host="127.0.0.7") is D
    assert decide(authz, Op.READ, host="127.0.0.1") is A


@pytest.mark.parametrize(
    ("name", "expected"),
    [("orders", A), ("orders-eu", A), ("orders.v2", A), ("order", D), ("xorders", D), ("ORDERS", D), ("", D)],
)
def test_prefixed(name: str, expected: Decision) -> None:
    authz = AclAuthorizer(acls=[acl(name="orders", pattern=PT.PREFIXED)])
    assert decide(authz, Op.READ, name) is expected


def test_prefixed_deny_overrides_literal_allow() -> None:
    authz = AclAuthorizer(acls=[acl(name="secret-x"), acl(name="secret", pattern=PT.PREFIXED, perm=DENY, op=Op.ALL)])
    assert decide(authz, Op.READ, "secret-x") is D


def test_prefixed_star_is_not_a_wildcard() -> None:
    authz = AclAuthorizer(acls=[acl(name="*", pattern=PT.PREFIXED)])
    assert decide(authz, Op.READ, "orders") is D
    assert decide(authz, Op.READ, "*foo") is A


def test_cluster_action_on_cluster() -> None:
    authz = AclAuthorizer(acls=[acl("kafka-cluster", Op.CLUSTER_ACTION, principal="User:proxy", rtype=RT.CLUSTER)])
    assert decide(authz, Op.CLUSTER_ACTION, "kafka-cluster", RT.CLUSTER, principal="User:proxy") is A
    assert decide(authz, Op.CLUSTER_ACTION, "kafka-cluster", RT.CLUSTER, principal="User:alice") is D


# --- filters: describe / delete -------------------------------------------------------------------

LIT = acl("orders", Op.READ)
LIT_STAR = acl("*", Op.WRITE)
PREFIX = acl("ord", Op.DESCRIBE, pattern=PT.PREFIXED)
PREFIX_OTHER = acl("pay", Op.READ, pattern=PT.PREFIXED)
OTHER_LIT = acl("payments", Op.READ, DENY, principal="User:bob", host="10.0.0.1")
GROUP = acl("orders", Op.READ, rtype=RT.GROUP)
ALL_ACLS = [LIT, LIT_STAR, PREFIX, PREFIX_OTHER, OTHER_LIT, GROUP]


@pytest.mark.parametrize(
    ("binding_filter", "expected"),
    [
        (AclBindingFilter(), ALL_ACLS),
        (AclBindingFilter(resource_type=RT.TOPIC), [LIT, LIT_STAR, PREFIX, PREFIX_OTHER, OTHER_LIT]),
        (AclBindingFilter(RT.TOPIC, "orders", PT.ANY), [LIT]),  # ANY: exact name, any pattern type
        (AclBindingFilter(RT.TOPIC, "ord", PT.ANY), [PREFIX]),
        (AclBindingFilter(RT.TOPIC, "orders", PT.LITERAL), [LIT]),
        (AclBindingFilter(RT.TOPIC, "ord", PT.LITERAL), []),
        (AclBindingFilter(RT.TOPIC, "ord", PT.PREFIXED), [PREFIX]),
        (AclBindingFilter(RT.TOPIC, "*", PT.LITERAL), [LIT_STAR]),
        (AclBindingFilter(RT.TOPIC, None, PT.PREFIXED), [PREFIX, PREFIX_OTHER]),
        (AclBindingFilter(RT.TOPIC, None, PT.LITERAL), [LIT, LIT_STAR, OTHER_LIT]),
        # MATCH: every binding that would apply to the named resource
        (AclBindingFilter(RT.TOPIC, "orders", PT.MATCH), [LIT, LIT_STAR, PREFIX]),
        (AclBindingFilter(RT.TOPIC, "payments", PT.MATCH), [LIT_STAR, PREFIX_OTHER, OTHER_LIT]),
        (AclBindingFilter(RT.TOPIC, "zzz", PT.MATCH), [LIT_STAR]),
        (AclBindingFilter(RT.ANY, "orders", PT.MATCH), [LIT, LIT_STAR, PREFIX, GROUP]),
        # other fields
        (AclBindingFilter(principal="User:bob"), [OTHER_LIT]),
        (AclBindingFilter(host="10.0.0.1"), [OTHER_LIT]),
        (AclBindingFilter(permission=DENY), [OTHER_LIT]),
        (AclBindingFilter(operation=Op.WRITE), [LIT_STAR]),
        (AclBindingFilter(RT.TOPIC, "orders", PT.MATCH, operation=Op.READ), [LIT]),
        (AclBindingFilter(resource_type=RT.CLUSTER), []),
    ],
)
def test_describe_filters(binding_filter: AclBindingFilter, expected: list[AclBinding]) -> None:
    authz = AclAuthorizer(acls=ALL_ACLS)
    assert authz.describe_acls(binding_filter) == expected


def test_delete_with_filters() -> None:
    authz = AclAuthorizer(acls=ALL_ACLS)
    deleted = authz.delete_acls(
        [
            AclBindingFilter(RT.TOPIC, "orders", PT.LITERAL),
            AclBindingFilter(RT.TOPIC, "orders", PT.LITERAL),  # Kafka matches every filter against the ACLs before the request
            AclBindingFilter(RT.TOPIC, "pay", PT.ANY),
        ]
    )
    assert deleted == [[LIT], [LIT], [PREFIX_OTHER]]
    assert authz.acls == [LIT_STAR, PREFIX, OTHER_LIT, GROUP]
    # the deletion has effect on authorization
    assert decide(authz, Op.READ, "orders") is D
    assert decide(authz, Op.DESCRIBE, "orders") is A  # still via the PREFIXED DESCRIBE


def test_delete_with_match_filter() -> None:
    authz = AclAuthorizer(acls=ALL_ACLS)
    (deleted,) = authz.delete_acls([AclBindingFilter(RT.TOPIC, "orders", PT.MATCH)])
    assert deleted == [LIT, LIT_STAR, PREFIX]
    assert authz.acls == [PREFIX_OTHER, OTHER_LIT, GROUP]


# --- create / validate ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "binding",
    [
        acl(rtype=RT.ANY),
        acl(rtype=RT.UNKNOWN),
        acl(pattern=PT.ANY),
        acl(pattern=PT.MATCH),
        acl(pattern=PT.UNKNOWN),
        acl(op=Op.ANY),
        acl(op=Op.UNKNOWN),
        acl(perm=PermissionType.ANY),
        acl(perm=PermissionType.UNKNOWN),
        acl(name=""),
        acl(name="my-cluster", op=Op.ALTER, rtype=RT.CLUSTER),
        acl(name="*", op=Op.ALTER, rtype=RT.CLUSTER),
        acl(principal="alice"),
    ],
)
def test_validate_rejects(binding: AclBinding) -> None:
    problem = binding.validate()
    assert isinstance(problem, str) and problem
    authz = AclAuthorizer()
    assert authz.create_acls([binding]) == [problem]
    assert authz.acls == []


@pytest.mark.parametrize(
    "binding",
    [
        acl(),
        acl(name="kafka-cluster", op=Op.CLUSTER_ACTION, rtype=RT.CLUSTER),
        acl(name="*", principal="User:*"),
        acl(name="ord", pattern=PT.PREFIXED, perm=DENY, op=Op.ALL, host="10.0.0.1"),
        acl(rtype=RT.TRANSACTIONAL_ID, name="tx"),
        acl(rtype=RT.TRANSACTIONAL_ID, name="tx", op=Op.TWO_PHASE_COMMIT),
        acl(principal=":alice"),  # Kafka only asks for a colon
        acl(host="not an address"),  # Kafka stores any host text
    ],
)
def test_validate_accepts(binding: AclBinding) -> None:
    assert binding.validate() is None


def test_create_acls_partial_success_and_dedup() -> None:
    authz = AclAuthorizer()
    good = acl()
    bad = acl(rtype=RT.ANY)
    results = authz.create_acls([good, bad, good])
    assert results[0] is None and isinstance(results[1], str) and results[2] is None
    assert authz.acls == [good]
    assert decide(authz, Op.READ) is A


def test_constructor_dedups_and_acls_is_a_copy() -> None:
    authz = AclAuthorizer(acls=[LIT, LIT, GROUP])
    assert authz.acls == [LIT, GROUP]
    authz.acls.clear()
    assert authz.acls == [LIT, GROUP]
