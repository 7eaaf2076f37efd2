"""KIP-590's rule for public endpoints: privileged principals are refused on client listeners."""

from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import DEFAULT_USERS, PROXY_PASSWORD, PROXY_USER, start_stack
from tests.integration.conftest import audit_records


async def test_a_privileged_principal_is_refused_on_a_client_listener_and_audited(nursery: Any, tmp_path: Path) -> None:
    stack = await start_stack(
        nursery,
        tmp_path / "audit",
        users={**DEFAULT_USERS, PROXY_USER: PROXY_PASSWORD},
        proxy_overrides={"privileged.principals": "User:proxy;User:broker"},
    )

    def login(user: str, password: str) -> tuple[int, str | None, bool]:
        with wire.connect(stack.sasl_address) as sock:
            assert wire.sasl_handshake(sock, "PLAIN") == 0
            answer = wire.call(sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": wire.plain_token(user, password)}, correlation_id=2)
            if int(answer.error_code) != 0:
                return int(answer.error_code), answer.error_message, wire.is_closed(sock)
            served = wire.call(sock, ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=3)
            return int(answer.error_code), None, int(served.error_code) == 0

    code, message, closed = await trio.to_thread.run_sync(login, PROXY_USER, PROXY_PASSWORD)
    assert code == ErrorCode.sasl_authentication_failed
    assert message == "Authentication failed: principal User:proxy is in privileged.principals and may not use listener CLIENT"
    assert closed
    assert await trio.to_thread.run_sync(login, "alice", DEFAULT_USERS["alice"]) == (0, None, True)

    refused = [r["data"] for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "refused"]
    assert len(refused) == 1
    assert refused[0]["authenticationInfo"] == {
        "principal": "User:proxy",
        "mechanism": "PLAIN",
        "listener": "CLIENT",
        "securityProtocol": "SASL_PLAINTEXT",
    }
    assert refused[0]["authorizationInfo"]["reason"] == "privileged-principal"
    assert refused[0]["requestMetadata"]["connectionId"].startswith("CLIENT-")
    # The proxy's own login to the controller is the internal path and is unaffected.
    assert stack.proxy.service.upstream.connected
