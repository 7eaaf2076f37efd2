// The client matrix's workflow in kafkajs's admin client. Its node_modules are installed once into
// ~/.cache/kafka-envelope-proxy by tests/interop/client_matrix/go_and_node.py (NODE_PATH points there).
//
//   node workflow.js <bootstrap> <admin> <password> <outsider> <password> <topic> <step,step,...>
//
// prints one line of JSON: step -> outcome, errors as Kafka's error names (kafkajs's error `type`).
// Reads right after a change are polled for a bounded time, as a broker learns the controller's changes
// a moment later. kafkajs's admin has no call for client quotas, SCRAM credentials or leader election,
// so those steps are not run with it (tests/interop/test_client_matrix.py, CLIENT_STEPS).
'use strict'

const {
  Kafka,
  logLevel,
  ConfigResourceTypes,
  ConfigSource,
  AclResourceTypes,
  AclOperationTypes,
  AclPermissionTypes,
  ResourcePatternTypes,
} = require('kafkajs')

const SETTLE_MS = 20000
// What kafkajs's fetchTopicMetadata throws while its cache still lists a topic the brokers no longer have.
const stale = seen => typeof seen.error === 'string' && seen.error.startsWith('CLIENT_ERROR(TypeError')
const SHOWN = ['retention.ms', 'cleanup.policy', 'min.insync.replicas', 'max.message.bytes', 'segment.bytes']

const nameOf = (constants, value) => Object.keys(constants).find(key => constants[key] === value) || String(value)

// What the matrix compares of an error: Kafka's name for it, or what the client said.
const errName = error => {
  if (error == null) return 'ok'
  if (error.type) return error.type
  if (error.originalError) return errName(error.originalError)
  if (Array.isArray(error.errors) && error.errors.length) {
    return [...new Set(error.errors.map(errName))].sort().join(',')
  }
  return `CLIENT_ERROR(${error.name}: ${error.message})`
}

const outcome = async action => {
  try {
    await action()
    return 'ok'
  } catch (e) {
    return errName(e)
  }
}

const read = async action => {
  try {
    return await action()
  } catch (e) {
    return errName(e)
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

const settled = async (action, done) => {
  const deadline = Date.now() + SETTLE_MS
  let seen = await read(action)
  while (!done(seen) && Date.now() < deadline) {
    await sleep(250)
    seen = await read(action)
  }
  return seen
}

const stderrLogger = () => ({ namespace, log }) => {
  process.stderr.write(`${namespace}: ${JSON.stringify(log)}\n`)
}

const connect = async (bootstrap, user, password) => {
  const kafka = new Kafka({
    clientId: 'client-matrix',
    brokers: bootstrap.split(','),
    sasl: { mechanism: 'plain', username: user, password },
    requestTimeout: 30000,
    connectionTimeout: 10000,
    logLevel: logLevel.ERROR,
    logCreator: stderrLogger,
    retry: { retries: 3, initialRetryTime: 200 },
  })
  const admin = kafka.admin()
  await admin.connect()
  return admin
}

const sortedIds = brokers => brokers.map(b => b.nodeId).sort((a, b) => a - b)

async function main() {
  const [bootstrap, adminUser, adminPassword, outsiderUser, outsiderPassword, topic, stepList] = process.argv.slice(2)
  const admin = await connect(bootstrap, adminUser, adminPassword)
  const results = {}

  const topicStateOf = client => async () => {
    try {
      const { topics } = await client.fetchTopicMetadata({ topics: [topic] })
      const found = topics.find(t => t.name === topic)
      return found ? { error: null, partitions: found.partitions.length } : { error: 'absent' }
    } catch (e) {
      return { error: errName(e) }
    }
  }
  const topicState = topicStateOf(admin)

  const configs = async () => {
    try {
      const { resources } = await admin.describeConfigs({
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
        includeSynonyms: true,
      })
      const entries = resources[0].configEntries
      const shown = { count: entries.length }
      for (const name of SHOWN) {
        const entry = entries.find(e => e.configName === name)
        shown[name] = entry
          ? {
              value: entry.configValue,
              source: nameOf(ConfigSource, entry.configSource),
              read_only: entry.readOnly,
              default: entry.isDefault,
              sensitive: entry.isSensitive,
              synonyms: (entry.configSynonyms || []).map(
                s => `${nameOf(ConfigSource, s.configSource)}:${s.configName}=${s.configValue}`
              ),
            }
          : null
      }
      return shown
    } catch (e) {
      return { error: errName(e) }
    }
  }

  const acl = {
    resourceType: AclResourceTypes.TOPIC,
    resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL,
    principal: 'User:bob',
    host: '*',
    operation: AclOperationTypes.READ,
    permissionType: AclPermissionTypes.ALLOW,
  }
  // LITERAL, not MATCH: other suites share the Kafka node, and MATCH would also list (and delete) their '*' ACLs.
  const aclFilter = {
    resourceType: AclResourceTypes.TOPIC,
    resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  }
  const renderAcl = (resource, entry) =>
    `${entry.principal} ${entry.host} ${nameOf(AclOperationTypes, entry.operation)} ` +
    `${nameOf(AclPermissionTypes, entry.permissionType)} ${nameOf(AclResourceTypes, resource.resourceType)}:` +
    `${nameOf(ResourcePatternTypes, resource.resourcePatternType)}:${resource.resourceName}`
  const acls = async () => {
    const { resources } = await admin.describeAcls(aclFilter)
    return resources.flatMap(resource => resource.acls.map(entry => renderAcl(resource, entry))).sort()
  }

  const view = async () => {
    const { brokers, controller } = await admin.describeCluster()
    return { brokers: sortedIds(brokers), addresses: brokers.map(b => `${b.host}:${b.port}`).sort(), controller }
  }

  const brokerConfig = async id => {
    try {
      const { resources } = await admin.describeConfigs({
        resources: [{ type: ConfigResourceTypes.BROKER, name: String(id) }],
        includeSynonyms: false,
      })
      const found = resources.find(r => r.resourceName === String(id))
      if (!found) return { error: 'no answer for the broker' }
      const mir = found.configEntries.find(e => e.configName === 'min.insync.replicas')
      return { error: null, has_configs: found.configEntries.length > 0, 'min.insync.replicas': mir ? mir.configValue : null }
    } catch (e) {
      return { error: errName(e) }
    }
  }

  for (const step of stepList.split(',')) {
    switch (step) {
      case 'create_topic':
        results[step] = await outcome(() =>
          admin.createTopics({
            topics: [{ topic, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
          })
        )
        break
      case 'describe_topic':
        results[step] = await settled(topicState, seen => seen.error === null)
        break
      case 'describe_configs':
        results[step] = await configs()
        break
      case 'alter_config':
        // kafkajs sends AlterConfigs (not incremental): the topic's whole dynamic config becomes this one entry.
        results[step] = await outcome(() =>
          admin.alterConfigs({
            resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '7200000' }] }],
          })
        )
        break
      case 'read_back': {
        const seen = await settled(configs, seen => ((seen || {})['retention.ms'] || {}).value === '7200000')
        results[step] = seen['retention.ms'] || seen
        break
      }
      case 'add_partitions':
        results[step] = await outcome(() => admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] }))
        break
      case 'describe_partitions':
        results[step] = await settled(topicState, seen => seen.partitions === 3)
        break
      case 'create_acl':
        results[step] = await outcome(() => admin.createAcls({ acl: [acl] }))
        break
      case 'describe_acls':
        results[step] = await settled(acls, seen => Array.isArray(seen) && seen.length > 0)
        break
      case 'delete_acls':
        results[step] = await read(async () => {
          const { filterResponses } = await admin.deleteAcls({ filters: [aclFilter] })
          return filterResponses.flatMap(f => f.matchingAcls.map(entry => renderAcl(entry, entry))).sort()
        })
        break
      case 'acls_after_delete':
        results[step] = await settled(acls, seen => Array.isArray(seen) && seen.length === 0)
        break
      case 'describe_cluster':
        results[step] = await read(async () => {
          const { brokers, controller, clusterId } = await admin.describeCluster()
          return { cluster_id: clusterId, controller_is_a_node: sortedIds(brokers).includes(controller) }
        })
        break
      case 'refused': {
        const outsider = await connect(bootstrap, outsiderUser, outsiderPassword)
        try {
          results[step] = await outcome(() =>
            outsider.createTopics({ topics: [{ topic: `${topic}-refused`, numPartitions: 1, replicationFactor: 1 }] })
          )
        } finally {
          await outsider.disconnect()
        }
        break
      }
      case 'delete_topic':
        results[step] = await outcome(() => admin.deleteTopics({ topics: [topic] }))
        break
      case 'after_delete':
        results[step] = await settled(topicState, seen => seen.error !== null)
        if (stale(results[step])) {
          // kafkajs answers a topic read from its cached metadata while that is younger than metadataMaxAge (five
          // minutes, and its admin client cannot set it), and turns a read that fails on every broker into null.
          // Behind several brokers, the refresh kafkajs makes right after DeleteTopics may land on one that has not
          // applied the delete yet, as it may against Kafka's own brokers. A new client starts with no cache.
          const fresh = await connect(bootstrap, adminUser, adminPassword)
          try {
            results[step] = await settled(topicStateOf(fresh), seen => seen.error !== null)
          } finally {
            await fresh.disconnect()
          }
        }
        break
      case 'broker_list': {
        // describeCluster is a Metadata request with no topics; fetchTopicMetadata one with the topic, whose
        // answer replaces the client's broker pool (what describeConfigs for a broker looks its node up in).
        const views = {}
        views.metadata_before = await read(view)
        views.metadata_with_topic = await read(async () => {
          await admin.fetchTopicMetadata({ topics: [topic] })
          return 'ok'
        })
        views.metadata_after = await read(view)
        results[step] = { views }
        break
      }
      case 'broker_configs':
        results[step] = await read(async () => {
          const ids = new Set((await view()).brokers)
          await admin.fetchTopicMetadata({ topics: [topic] })
          for (const id of (await view()).brokers) ids.add(id)
          const byId = {}
          for (const id of [...ids].sort((a, b) => a - b)) byId[String(id)] = await brokerConfig(id)
          return { by_id: byId }
        })
        break
      case 'list_reassignments':
        results[step] = await read(async () => {
          const { topics } = await admin.listPartitionReassignments({ topics: [{ topic, partitions: [0] }] })
          return topics.flatMap(t =>
            t.partitions.map(p => `${t.topic}-${p.partition} adding [${p.addingReplicas}] removing [${p.removingReplicas}]`)
          )
        })
        break
      default:
        throw new Error(`unknown step ${step}`)
    }
  }
  await admin.disconnect()
  process.stdout.write(JSON.stringify(results) + '\n')
}

main().catch(e => {
  process.stderr.write(`${e.stack || e}\n`)
  process.exit(1)
})
