"""The controller's dispatch table: which handler answers which API.

Each handler takes the decoded request and the request context, applies the
change to the image (unless validate_only) and returns a version-independent
response dict for `envelope.build.build_entity`. The handlers live by
resource: topics.py, configs.py, describe_configs.py, acls.py, partition_admin.py, quotas.py,
scram_credentials.py, delegation_tokens.py, quorum.py, membership.py (UnregisterBroker, Add/RemoveRaftVoter),
leadership.py (DescribeCluster), and reads.py for the APIs served to direct callers only (DescribeAcls lives with
the other ACL APIs in acls.py, DescribeDelegationToken with the other token APIs).

A handler may raise ProtocolError where Kafka cannot even read the request
(acls.UnreadableRequest); anything else it raises is a bug, which the server
answers as Kafka answers an unexpected error (UNKNOWN_SERVER_ERROR).
"""

from collections.abc import Callable, Mapping
from typing import Any

from authz import AclStore, Authorizer, RequestContext
from controller.acls import AclHandlers
from controller.config_state import ConfigState
from controller.configs import ConfigHandlers
from controller.created_topic_configs import created_topic_configs
from controller.delegation_tokens import Clock, DelegationTokenHandlers, TokenSettings, wall_clock_ms
from controller.describe_configs import ConfigDescriber
from controller.image import MetadataImage
from controller.leadership import Leadership
from controller.membership import MembershipHandlers
from controller.partition_admin import PartitionAdminHandlers
from controller.quorum import QuorumHandlers
from controller.quotas import QuotaHandlers
from controller.reads import ReadHandlers
from controller.scram_credentials import ScramCredentialHandlers
from controller.topic_configs import topic_configs_problem
from controller.topic_rules import broker_ids_of
from controller.topics import TopicHandlers
from envelope.apis import ApiKey

Handler = Callable[[Any, RequestContext], dict[str, Any]]


class Handlers:
    def __init__(
        self,
        image: MetadataImage,
        authorizer: Authorizer,
        *,
        leadership: Leadership,
        default_partitions: int,
        default_replication_factor: int,
        broker_count: int,
        static_config: Mapping[str, str] | None = None,
        tokens: TokenSettings | None = None,
        clock: Clock = wall_clock_ms,
    ) -> None:
        """`static_config` is the controller's own properties: what Kafka calls its static broker configs;
        `tokens` the `delegation.token.*` settings (default: disabled); `clock` the wall clock in ms tokens use."""
        self.image = image
        self.authorizer = authorizer
        topics = TopicHandlers(
            image,
            authorizer,
            default_partitions=default_partitions,
            default_replication_factor=default_replication_factor,
            broker_ids=broker_ids_of(broker_count),
            # A new topic's configs are checked over the broker configs as they are when it is created.
            configs_problem=lambda configs: topic_configs_problem(configs, ConfigState(image, static_config or {}, leadership.node_id)),
            created_configs=lambda configs: created_topic_configs(image, static_config or {}, leadership.node_id, configs),
        )
        configs = ConfigHandlers(
            image,
            authorizer,
            node_id=leadership.node_id,
            static_config=static_config,
            broker_ids=broker_ids_of(broker_count),
            controller_ids=leadership.voter_ids,
        )
        describer = ConfigDescriber(
            image, authorizer, node_id=leadership.node_id, static_config=static_config or {}, broker_ids=broker_ids_of(broker_count)
        )
        acls = AclHandlers(image, authorizer)
        self.acl_store: AclStore | None = acls.acl_store
        reads = ReadHandlers(
            image,
            authorizer,
            node_id=leadership.node_id,
            cluster_id=leadership.cluster_id,
            broker_count=broker_count,
            endpoint=lambda listener: leadership.own_endpoints.get(listener.upper()),
        )
        quotas = QuotaHandlers(image, authorizer)
        scram = ScramCredentialHandlers(image, authorizer)
        partitions = PartitionAdminHandlers(image, authorizer, broker_ids=reads.broker_ids)
        # The number of changes ever recorded stands in for the metadata log's end offset.
        quorum = QuorumHandlers(image, authorizer, leadership=leadership, offset=lambda: image.change_count)
        self.tokens = DelegationTokenHandlers(image, authorizer, tokens or TokenSettings(), clock=clock)
        membership = MembershipHandlers(image, authorizer, leadership=leadership, broker_ids=lambda: reads.broker_ids)
        self.by_key: dict[int, Handler] = {
            ApiKey.CREATE_TOPICS: topics.create_topics,
            ApiKey.DELETE_TOPICS: topics.delete_topics,
            ApiKey.CREATE_PARTITIONS: topics.create_partitions,
            ApiKey.ALTER_CONFIGS: configs.alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,
            ApiKey.CREATE_ACLS: acls.create_acls,
            ApiKey.DELETE_ACLS: acls.delete_acls,
            ApiKey.ELECT_LEADERS: partitions.elect_leaders,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: partitions.alter_partition_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: partitions.list_partition_reassignments,
            ApiKey.ALTER_CLIENT_QUOTAS: quotas.alter_client_quotas,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: scram.alter_user_scram_credentials,
            ApiKey.DESCRIBE_QUORUM: quorum.describe_quorum,
            ApiKey.UPDATE_FEATURES: quorum.update_features,
            ApiKey.CREATE_DELEGATION_TOKEN: self.tokens.create_delegation_token,
            ApiKey.RENEW_DELEGATION_TOKEN: self.tokens.renew_delegation_token,
            ApiKey.EXPIRE_DELEGATION_TOKEN: self.tokens.expire_delegation_token,
            ApiKey.UNREGISTER_BROKER: membership.unregister_broker,
            ApiKey.ADD_RAFT_VOTER: membership.add_raft_voter,
            ApiKey.REMOVE_RAFT_VOTER: membership.remove_raft_voter,
            ApiKey.DESCRIBE_CLUSTER: lambda body, ctx: leadership.describe_cluster(authorizer, body, ctx),
            # Reads are served to direct callers only: an Envelope may carry forwardable APIs alone.
            ApiKey.METADATA: reads.metadata,
            ApiKey.DESCRIBE_CONFIGS: describer.describe_configs,
            ApiKey.DESCRIBE_ACLS: acls.describe_acls,
            ApiKey.DESCRIBE_CLIENT_QUOTAS: quotas.describe_client_quotas,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: scram.describe_user_scram_credentials,
            ApiKey.DESCRIBE_DELEGATION_TOKEN: self.tokens.describe_delegation_token,
        }
