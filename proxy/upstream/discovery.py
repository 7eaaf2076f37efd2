"""Which controller is active, asked from outside the quorum through the controller listener.

In order of preference, by what the node advertises:
1. DescribeCluster v1+ with EndpointType=CONTROLLER (KIP-919): ControllerId is the node's view of
   the Raft leader, and Brokers holds the controllers' endpoints on this listener.
2. DescribeQuorum: the metadata partition's LeaderId; its endpoint from the v2 `nodes` list, from
   `controller.quorum.voters`, or else the answering node (only the leader answers DescribeQuorum).
3. Neither: the node itself is tried, and NOT_CONTROLLER moves on to the next address.

The answers are read by pure functions; `ask` runs them over an open link; `Discovery` is the
state machine that keeps the answer current (looking again on NOT_CONTROLLER, a lost connection,
or every `controller.discovery.interval.ms`). Sending only reads its answer and tells it when the
answer proved wrong, so the two never share state but through `wait_active`, `forget` and `reached`.
"""

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio
from kio.schema.errors import ErrorCode

from envelope.apis import ApiKey, EndpointType
from envelope.errors import ProtocolError
from envelope.responses import NO_NODE
from proxy.backoff import Backoff
from proxy.net.addresses import ControllerAddress
from proxy.upstream.cluster_identity import ClusterIdentity
from proxy.upstream.connector import LOGGER, Connector, UpstreamEvent
from proxy.upstream.link import Link, LinkBroken, UpstreamUnavailable
from proxy.upstream.settings import UpstreamSettings

log = logging.getLogger(LOGGER)

METADATA_TOPIC = "__cluster_metadata"
# What each discovery request needs of the proxy's principal on the Cluster resource, as Kafka 4.3.1's controller checks it.
DESCRIBE_CLUSTER_OPERATION = "Alter"
DESCRIBE_QUORUM_OPERATION = "Describe"


class DiscoveryError(Exception):
    """This node could not say who the active controller is."""

    def __init__(self, message: str, code: int = ErrorCode.unknown_server_error) -> None:
        super().__init__(message)
        self.code = code

    @property
    def unauthorized(self) -> bool:
        return self.code == ErrorCode.cluster_authorization_failed


@dataclass(frozen=True, slots=True)
class Answer:
    """One node's view: the active controller (None while no leader is known) and the endpoints it named."""

    active: ControllerAddress | None
    endpoints: tuple[ControllerAddress, ...] = ()
    method: str = "probe"
    cluster_id: str | None = None
    """The cluster id the node reported (DescribeCluster carries it; DescribeQuorum and a probe do not)."""


def from_describe_cluster(response: Any) -> Answer:
    code = int(response.error_code)
    if code != ErrorCode.none:
        raise DiscoveryError(f"DescribeCluster answered {ErrorCode(code).name.upper()}: {response.error_message}", code)
    endpoints = tuple(ControllerAddress(str(b.host), int(b.port), int(b.broker_id)) for b in response.brokers)
    leader = int(response.controller_id)
    active = next((endpoint for endpoint in endpoints if endpoint.node_id == leader), None)
    return Answer(active, endpoints, "DescribeCluster", str(response.cluster_id or "") or None)


def from_describe_quorum(response: Any, listener: str, voters: tuple[ControllerAddress, ...], answering: ControllerAddress) -> Answer:
    """Only the leader answers DescribeQuorum (others: NOT_LEADER_OR_FOLLOWER), so without a listed
    endpoint the leader is the node that answered."""
    code = int(response.error_code)
    if code != ErrorCode.none:
        raise DiscoveryError(f"DescribeQuorum answered {ErrorCode(code).name.upper()}", code)
    partitions = [p for t in response.topics if str(t.topic_name) == METADATA_TOPIC for p in t.partitions]
    if not partitions or int(partitions[0].error_code) != ErrorCode.none:
        codes = [ErrorCode(int(p.error_code)).name.upper() for p in partitions]
        raise DiscoveryError(f"DescribeQuorum gave no leader for {METADATA_TOPIC}-0: {codes or 'no partition'}", ErrorCode.not_leader_or_follower)
    leader = int(partitions[0].leader_id)
    named = [
        ControllerAddress(str(item.host), int(item.port), int(node.node_id))
        for node in getattr(response, "nodes", ())
        for item in node.listeners
        if str(item.name).upper() == listener.upper()
    ]
    endpoints = tuple(named) or tuple(voter for voter in voters if voter.node_id is not None)
    if leader == NO_NODE:
        return Answer(None, endpoints, "DescribeQuorum")
    active = next((endpoint for endpoint in endpoints if endpoint.node_id == leader), None)
    return Answer(active or ControllerAddress(answering.host, answering.port, leader), endpoints, "DescribeQuorum")


def shared_endpoints(endpoints: tuple[ControllerAddress, ...]) -> dict[str, list[int]]:
    """Addresses that more than one node advertises: the proxy cannot tell those nodes apart.

    Typically a listener bound to loopback (a sidecar's `127.0.0.1:9095`) and advertised as such by
    every controller: the proxy would send to its own node while meaning the leader.
    """
    nodes: dict[str, list[int]] = {}
    for endpoint in endpoints:
        if endpoint.node_id is not None:
            nodes.setdefault(endpoint.address, []).append(endpoint.node_id)
    return {address: ids for address, ids in nodes.items() if len(set(ids)) > 1}


def _highest(link: Link, api_key: ApiKey, lowest: int, highest: int) -> int | None:
    supported = link.ranges.get(api_key)
    if supported is None or supported.max < lowest or supported.min > highest:
        return None
    return min(supported.max, highest)


async def ask(link: Link, voters: tuple[ControllerAddress, ...], *, deadline: float) -> Answer:
    """The node at the other end of `link`, asked with the best method it advertises and the proxy may use.

    DescribeCluster refused for want of an ACL falls back to DescribeQuorum; both refused raise the
    DiscoveryError of the last (`unauthorized`), so that the caller can name the ACLs.
    """
    refused: DiscoveryError | None = None
    try:
        version = _highest(link, ApiKey.DESCRIBE_CLUSTER, 1, 2)
        if version is not None:
            values: dict[str, object] = {"include_cluster_authorized_operations": False, "endpoint_type": EndpointType.CONTROLLER}
            if version >= 2:
                values["include_fenced_brokers"] = False
            try:
                return from_describe_cluster(await link.call(ApiKey.DESCRIBE_CLUSTER, version, values, deadline=deadline))
            except DiscoveryError as exc:
                if not exc.unauthorized:
                    raise
                refused = exc
        version = _highest(link, ApiKey.DESCRIBE_QUORUM, 0, 2)
        if version is not None:
            topics = [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]
            response = await link.call(ApiKey.DESCRIBE_QUORUM, version, {"topics": topics}, deadline=deadline)
            return from_describe_quorum(response, link.settings.listener_name, voters, link.server)
    except (ProtocolError, ValueError, TypeError, AttributeError) as exc:
        raise DiscoveryError(f"cannot read the discovery answer of {link.server.address}: {exc}") from exc
    if refused is not None:
        raise refused
    return Answer(link.server, (), "probe")


class Discovery:
    """Which controller is active, kept current: found once, looked for again when it proved wrong."""

    def __init__(
        self,
        settings: UpstreamSettings,
        connector: Connector,
        identity: ClusterIdentity,
        backoff: Backoff,
        *,
        on_active: Callable[[ControllerAddress], Awaitable[None]],
    ) -> None:
        """`on_active(server)` runs when `server` becomes the active controller, before requests are sent to it
        (the pool closes its idle connections to the previous one)."""
        self.settings = settings
        self.connector = connector
        self.identity = identity
        self.backoff = backoff
        self.active: ControllerAddress | None = None
        self.endpoints: tuple[ControllerAddress, ...] = ()
        self.reachable = False
        """The active controller's last connection attempt succeeded."""
        self.reconnects = 0
        self._on_active = on_active
        self._known = trio.Event()
        self._look_again = trio.Event()
        self._skip: set[ControllerAddress] = set()

    async def wait_active(self, deadline: float) -> ControllerAddress:
        while self.active is None:
            with trio.move_on_at(deadline):
                await self._known.wait()
            if self.active is None and trio.current_time() >= deadline:
                raise UpstreamUnavailable(f"no active controller known ({self.settings.servers_key}={self.settings.address})")
        return self.active

    def reached(self) -> None:
        """A new connection to the active controller succeeded."""
        self.reachable = True

    def forget(self, server: ControllerAddress, why: str) -> None:
        """`server` is not (or no longer reachable as) the active controller: look again, trying it last."""
        if self.active != server:
            return
        log.warning("controller %s %s: looking for the active controller again", server, why)
        self.active = None
        self.reachable = False
        self._known = trio.Event()
        self._skip.add(server)
        self._look_again.set()
        self.reconnects += 1

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Find the active controller, then look again on NOT_CONTROLLER, a lost connection, or every
        `controller.discovery.interval.ms`; report started after the first round."""
        failed_rounds = 0
        started = False
        while True:
            self._look_again = trio.Event()
            watched = await self._discover()
            if not started:
                task_status.started()
                started = True
            if watched is not None:
                failed_rounds = 0
                await self._watch(watched)
            else:
                # Each node's own backoff paces its connects; this also paces rounds that reached nodes
                # which know no leader yet (an election), which are not connection failures.
                failed_rounds += 1
                await trio.sleep(self.backoff.delay(failed_rounds))

    async def _watch(self, link: Link) -> None:
        """Until it is time to look again: the discovery connection to the active controller is kept open and
        read, so that a controller that goes away is noticed at once, not at the next request. A connection
        that lasts the whole interval clears the node's reconnect backoff, as an answered request does."""
        lasted = False
        try:
            async with trio.open_nursery() as nursery:

                async def next_look() -> None:
                    nonlocal lasted
                    with trio.move_on_after(self.settings.discovery_interval) as interval:
                        await self._look_again.wait()
                    lasted = interval.cancelled_caught
                    nursery.cancel_scope.cancel()

                nursery.start_soon(next_look)
                why = await link.wait_closed()
                nursery.cancel_scope.cancel()
                self.connector.failed(link.server, since=link.opened_at)
                if self.active == link.server:
                    self.forget(link.server, why)
                    await self.connector.report(UpstreamEvent.RECONNECT)
        finally:
            with trio.CancelScope(shield=True):
                await link.aclose()
        if lasted:
            self.connector.reconnect_backoff.succeeded(link.server.address)

    def _candidates(self) -> list[ControllerAddress]:
        """The endpoints learned last, then the configured addresses; those that just failed go last."""
        ordered: list[ControllerAddress] = []
        for server in (*self.endpoints, *self.settings.servers):
            if all(server.address != seen.address for seen in ordered):
                ordered.append(server)
        fresh = [server for server in ordered if server not in self._skip]
        return fresh + [server for server in ordered if server in self._skip]

    async def _discover(self) -> Link | None:
        """One round over the candidates: the link to the active controller when one is known and reachable."""
        for candidate in self._candidates():
            link = await self.connector.probe(candidate)
            if link is None:
                continue
            answer = await self._ask(link) if self.settings.discover else Answer(candidate)
            if answer is None:
                continue
            if not self.identity.accept(f"controller {candidate}", answer.cluster_id):
                await link.aclose()
                continue
            if answer.endpoints and answer.endpoints != self.endpoints:
                self.endpoints = answer.endpoints
                for address, nodes in shared_endpoints(answer.endpoints).items():  # said once per new list, not per round
                    log.error(
                        "controllers %s all advertise %s on listener %s: the proxy cannot tell them apart and may reach only one. "
                        "Advertise each controller's own address, reachable from the proxy, on that listener (advertised.listeners)",
                        nodes,
                        address,
                        self.settings.listener_name,
                    )
            if answer.active is None:
                log.info("controller %s knows no active controller yet (election in progress)", candidate)
                await link.aclose()
                continue
            if answer.active.address != candidate.address:
                await link.aclose()
                link = await self.connector.probe(answer.active)
                if link is None:
                    continue
            await self._use(answer.active, link)
            return link
        self._skip.clear()
        return None

    async def _ask(self, link: Link) -> Answer | None:
        try:
            return await ask(link, self.settings.servers, deadline=trio.current_time() + self.settings.request_timeout)
        except DiscoveryError as exc:
            if exc.unauthorized:
                # Without the ACL, the node is tried as it is (NOT_CONTROLLER moves on): the proxy still
                # works, and the client sees the controller's own answer, CLUSTER_ACTION refusals included.
                log.error("controller %s: %s; %s. Trying it as the active controller meanwhile", link.server, exc, _acl_hint(self.settings))
                return Answer(link.server)
            log.warning("controller %s: %s", link.server, exc)
        except LinkBroken as exc:
            log.warning("controller %s: %s", link.server, exc)
            self.connector.failed(link.server, since=link.opened_at)
        await link.aclose()
        return None

    async def _use(self, active: ControllerAddress, link: Link) -> None:
        server = active if active.node_id is not None else link.server
        if server != self.active:
            identity = self.settings.username or self.settings.certificate_dn or "ANONYMOUS"
            # A pool over brokers (read.bootstrap.servers: no discovery) names the broker it reads from, not a controller.
            role = "active controller" if self.settings.discover else "read upstream broker"
            log.info("%s: %s (%s, as %s)", role, server, self.settings.security_protocol, identity)
        link.server = server
        await self._on_active(server)
        await self.connector.opened(link, active=True)
        self.active = server
        self.reachable = True
        self._skip.discard(server)
        self._known.set()


def _acl_hint(settings: UpstreamSettings) -> str:
    principal = f"User:{settings.username or settings.certificate_dn or 'ANONYMOUS'}"
    return (
        f"to find the active controller, grant {principal} {DESCRIBE_QUORUM_OPERATION} (DescribeQuorum) or {DESCRIBE_CLUSTER_OPERATION} "
        f"(DescribeCluster) on the cluster: kafka-acls --add --allow-principal {principal} --operation {DESCRIBE_QUORUM_OPERATION} --cluster"
    )


__all__ = ["Answer", "Discovery", "DiscoveryError", "ask", "from_describe_cluster", "from_describe_quorum", "shared_endpoints"]
