// The client matrix's workflow in franz-go's admin client (kadm), built once into
// ~/.cache/kafka-envelope-proxy by tests/interop/client_matrix/go_and_node.py.
//
//	kadm-workflow <bootstrap> <admin> <password> <outsider> <password> <topic> <step,step,...>
//
// prints one line of JSON: step -> outcome, errors as Kafka's error names (kerr). Reads right after a
// change are polled for a bounded time, as a broker learns the controller's changes a moment later.
// Node ids are reported as they are seen; tests/interop/client_matrix/workflow.py decides what of them
// is compared.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const (
	timeout = 60 * time.Second
	settle  = 20 * time.Second
)

var shown = []string{"retention.ms", "cleanup.policy", "min.insync.replicas", "max.message.bytes", "segment.bytes"}

type outcome = any

// errName is what the matrix compares of an error: Kafka's name for it, or what the client said.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "CLIENT_TIMEOUT"
	}
	return "CLIENT_ERROR(" + err.Error() + ")"
}

func errOrNil(err error) any {
	if err == nil {
		return nil
	}
	return errName(err)
}

func settled(read func() outcome, done func(outcome) bool) outcome {
	deadline := time.Now().Add(settle)
	seen := read()
	for !done(seen) && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		seen = read()
	}
	return seen
}

func client(bootstrap, user, password string) (*kgo.Client, *kadm.Client) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()),
		kgo.MetadataMinAge(250*time.Millisecond),
		kgo.RequestTimeoutOverhead(30*time.Second),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kgo.NewClient:", err)
		os.Exit(2)
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(30000)
	return cl, adm
}

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

func main() {
	if len(os.Args) != 8 {
		fmt.Fprintln(os.Stderr, "usage: kadm-workflow <bootstrap> <admin> <password> <outsider> <password> <topic> <steps>")
		os.Exit(2)
	}
	bootstrap, topic := os.Args[1], os.Args[6]
	cl, adm := client(bootstrap, os.Args[2], os.Args[3])
	defer cl.Close()
	w := &workflow{cl: cl, adm: adm, topic: topic, bootstrap: bootstrap, outsider: [2]string{os.Args[4], os.Args[5]}}
	results := map[string]outcome{}
	for _, step := range strings.Split(os.Args[7], ",") {
		results[step] = w.run(step)
	}
	out, err := json.Marshal(results)
	if err != nil {
		fmt.Fprintln(os.Stderr, "json:", err)
		os.Exit(2)
	}
	fmt.Println(string(out))
}

type workflow struct {
	cl        *kgo.Client
	adm       *kadm.Client
	topic     string
	bootstrap string
	outsider  [2]string
}

func (w *workflow) topicState() outcome {
	c, cancel := ctx()
	defer cancel()
	m, err := w.adm.Metadata(c, w.topic)
	if err != nil {
		return map[string]any{"error": errName(err)}
	}
	t, ok := m.Topics[w.topic]
	if !ok {
		return map[string]any{"error": "absent"}
	}
	return map[string]any{"error": errOrNil(t.Err), "partitions": len(t.Partitions)}
}

func field(seen outcome, name string) any {
	if m, ok := seen.(map[string]any); ok {
		return m[name]
	}
	return nil
}

func (w *workflow) configs() outcome {
	c, cancel := ctx()
	defer cancel()
	rcs, err := w.adm.DescribeTopicConfigs(c, w.topic)
	if err != nil {
		return map[string]any{"error": errName(err)}
	}
	rc, err := rcs.On(w.topic, nil)
	if err != nil {
		return map[string]any{"error": errName(err)}
	}
	if rc.Err != nil {
		return map[string]any{"error": errName(rc.Err)}
	}
	result := map[string]any{"count": len(rc.Configs)}
	for _, name := range shown {
		result[name] = nil
	}
	for _, cfg := range rc.Configs {
		for _, name := range shown {
			if cfg.Key == name {
				synonyms := []string{}
				for _, s := range cfg.Synonyms {
					synonyms = append(synonyms, fmt.Sprintf("%s:%s=%s", s.Source, s.Key, deref(s.Value)))
				}
				result[name] = map[string]any{"value": cfg.Value, "source": cfg.Source.String(), "sensitive": cfg.Sensitive, "synonyms": synonyms}
			}
		}
	}
	return result
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func (w *workflow) aclFilter() *kadm.ACLBuilder {
	// LITERAL, not MATCH: other suites share the Kafka node, and MATCH would also list (and delete) their '*' ACLs.
	return kadm.NewACLs().Topics(w.topic).ResourcePatternType(kadm.ACLPatternLiteral).
		Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny)
}

func (w *workflow) acls() outcome {
	c, cancel := ctx()
	defer cancel()
	results, err := w.adm.DescribeACLs(c, w.aclFilter())
	if err != nil {
		return errName(err)
	}
	found := []string{}
	for _, r := range results {
		if r.Err != nil {
			return errName(r.Err)
		}
		for _, d := range r.Described {
			found = append(found, describeACL(d.Principal, d.Host, d.Operation, d.Permission, d.Type, d.Name, d.Pattern))
		}
	}
	sort.Strings(found)
	return found
}

func describeACL(principal, host string, op kadm.ACLOperation, perm kmsg.ACLPermissionType, typ kmsg.ACLResourceType, name string, pattern kadm.ACLPattern) string {
	return fmt.Sprintf("%s %s %s %s %s:%s:%s", principal, host, op, perm, typ, pattern, name)
}

// brokerView is one answer's broker ids and controller id.
type brokerView struct {
	ids        []int32
	addresses  []string
	controller int32
	err        error
}

func (v brokerView) outcome() outcome {
	if v.err != nil {
		return errName(v.err)
	}
	return map[string]any{"brokers": v.ids, "addresses": v.addresses, "controller": v.controller}
}

func newView(ids []int32, addresses []string, controller int32) brokerView {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	sort.Strings(addresses)
	return brokerView{ids: ids, addresses: addresses, controller: controller}
}

func metadataView(m kadm.Metadata, err error) brokerView {
	if err != nil {
		return brokerView{err: err}
	}
	ids, addresses := []int32{}, []string{}
	for _, b := range m.Brokers {
		ids = append(ids, b.NodeID)
		addresses = append(addresses, fmt.Sprintf("%s:%d", b.Host, b.Port))
	}
	return newView(ids, addresses, m.Controller)
}

// describeCluster sends DescribeCluster (KIP-700) with the client's own request path: kadm has no call for it.
func (w *workflow) describeCluster() (brokerView, string) {
	c, cancel := ctx()
	defer cancel()
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(c, w.cl)
	if err != nil {
		return brokerView{err: err}, ""
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return brokerView{err: err}, ""
	}
	ids, addresses := []int32{}, []string{}
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
		addresses = append(addresses, fmt.Sprintf("%s:%d", b.Host, b.Port))
	}
	return newView(ids, addresses, resp.ControllerID), resp.ClusterID
}

func (w *workflow) brokerMetadata() brokerView {
	c, cancel := ctx()
	defer cancel()
	return metadataView(w.adm.BrokerMetadata(c))
}

func (w *workflow) topicMetadata() brokerView {
	c, cancel := ctx()
	defer cancel()
	return metadataView(w.adm.Metadata(c, w.topic))
}

// brokerList: the brokers the client is told of before a topic describe, in it, and after it, as each
// answer lists them (the client replaces its own broker list from each Metadata answer).
func (w *workflow) brokerList() outcome {
	views := map[string]any{}
	views["metadata_before"] = w.brokerMetadata().outcome()
	cluster, _ := w.describeCluster()
	views["describe_cluster_before"] = cluster.outcome()
	views["metadata_with_topic"] = w.topicMetadata().outcome()
	views["metadata_after"] = w.brokerMetadata().outcome()
	cluster, _ = w.describeCluster()
	views["describe_cluster_after"] = cluster.outcome()
	return map[string]any{"views": views}
}

// brokerConfigs: DescribeConfigs BROKER for every broker id any of the client's views lists.
func (w *workflow) brokerConfigs() outcome {
	seen := map[int32]bool{}
	cluster, _ := w.describeCluster()
	for _, v := range []brokerView{w.brokerMetadata(), w.topicMetadata(), cluster} {
		if v.err != nil {
			return map[string]any{"error": errName(v.err)}
		}
		for _, id := range v.ids {
			seen[id] = true
		}
	}
	byID := map[string]any{}
	for id := range seen {
		byID[strconv.Itoa(int(id))] = w.brokerConfig(id)
	}
	return map[string]any{"by_id": byID}
}

func (w *workflow) brokerConfig(id int32) outcome {
	c, cancel := ctx()
	defer cancel()
	rcs, err := w.adm.DescribeBrokerConfigs(c, id)
	if err != nil {
		return map[string]any{"error": errName(err)}
	}
	rc, err := rcs.On(strconv.Itoa(int(id)), nil)
	if err != nil {
		return map[string]any{"error": "no answer for the broker: " + errName(err)}
	}
	if rc.Err != nil {
		return map[string]any{"error": errName(rc.Err)}
	}
	result := map[string]any{"error": nil, "has_configs": len(rc.Configs) > 0, "min.insync.replicas": nil}
	for _, cfg := range rc.Configs {
		if cfg.Key == "min.insync.replicas" {
			result["min.insync.replicas"] = cfg.Value
		}
	}
	return result
}

func (w *workflow) quotaEntity() kadm.ClientQuotaEntity {
	user := w.topic + "-quota"
	return kadm.ClientQuotaEntity{{Type: "user", Name: &user}}
}

func (w *workflow) quotas() outcome {
	c, cancel := ctx()
	defer cancel()
	user := w.topic + "-quota"
	described, err := w.adm.DescribeClientQuotas(c, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &user, MatchType: 0}})
	if err != nil {
		return errName(err)
	}
	found := []string{}
	for _, q := range described {
		values := []string{}
		for _, v := range q.Values {
			values = append(values, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
		}
		sort.Strings(values)
		found = append(found, q.Entity.String()+" "+strings.Join(values, ","))
	}
	sort.Strings(found)
	return found
}

func (w *workflow) alterQuotas(remove bool) outcome {
	c, cancel := ctx()
	defer cancel()
	ops := []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576, Remove: remove}, {Key: "consumer_byte_rate", Value: 2097152, Remove: remove}}
	altered, err := w.adm.AlterClientQuotas(c, []kadm.AlterClientQuotaEntry{{Entity: w.quotaEntity(), Ops: ops}})
	if err != nil {
		return errName(err)
	}
	errs := []string{}
	for _, a := range altered {
		errs = append(errs, errName(a.Err))
	}
	return errs
}

func empty(seen outcome) bool {
	list, ok := seen.([]string)
	return ok && len(list) == 0
}

// clientQuotas: set two quotas on a user, read them back, remove them, read again.
func (w *workflow) clientQuotas() outcome {
	result := map[string]any{"alter": w.alterQuotas(false)}
	result["described"] = settled(w.quotas, func(seen outcome) bool { list, ok := seen.([]string); return ok && len(list) > 0 })
	result["remove"] = w.alterQuotas(true)
	result["after_remove"] = settled(w.quotas, empty)
	return result
}

func (w *workflow) scrams() outcome {
	c, cancel := ctx()
	defer cancel()
	user := w.topic + "-scram"
	described, err := w.adm.DescribeUserSCRAMs(c, user)
	if err != nil {
		return errName(err)
	}
	d, ok := described[user]
	if !ok {
		return "no answer for the user"
	}
	if d.Err != nil {
		return errName(d.Err)
	}
	infos := []string{}
	for _, i := range d.CredInfos {
		infos = append(infos, fmt.Sprintf("%s/%d", i.Mechanism, i.Iterations))
	}
	sort.Strings(infos)
	return infos
}

// scramCredentials: upsert a SCRAM-SHA-256 credential, describe it, delete it, describe again.
func (w *workflow) scramCredentials() outcome {
	user := w.topic + "-scram"
	alter := func(del []kadm.DeleteSCRAM, upsert []kadm.UpsertSCRAM) outcome {
		c, cancel := ctx()
		defer cancel()
		altered, err := w.adm.AlterUserSCRAMs(c, del, upsert)
		if err != nil {
			return errName(err)
		}
		return errName(altered[user].Err)
	}
	result := map[string]any{}
	result["upsert"] = alter(nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "matrix-secret"}})
	result["described"] = settled(w.scrams, func(seen outcome) bool { _, ok := seen.([]string); return ok })
	result["delete"] = alter([]kadm.DeleteSCRAM{{User: user, Mechanism: kadm.ScramSha256}}, nil)
	result["after_delete"] = settled(w.scrams, func(seen outcome) bool { _, ok := seen.([]string); return !ok })
	return result
}

func (w *workflow) partitions() kadm.TopicsSet {
	s := kadm.TopicsSet{}
	s.Add(w.topic, 0)
	return s
}

func (w *workflow) electLeaders() outcome {
	c, cancel := ctx()
	defer cancel()
	results, err := w.adm.ElectLeaders(c, kadm.ElectPreferredReplica, w.partitions())
	if err != nil {
		return errName(err)
	}
	found := map[string]any{}
	for topic, ps := range results {
		for p, r := range ps {
			found[fmt.Sprintf("%s-%d", topic, p)] = errName(r.Err)
		}
	}
	return found
}

func (w *workflow) listReassignments() outcome {
	c, cancel := ctx()
	defer cancel()
	results, err := w.adm.ListPartitionReassignments(c, w.partitions())
	if err != nil {
		return errName(err)
	}
	found := []string{}
	for _, r := range results.Sorted() {
		found = append(found, fmt.Sprintf("%s-%d adding %v removing %v", r.Topic, r.Partition, r.AddingReplicas, r.RemovingReplicas))
	}
	return found
}

func (w *workflow) run(step string) outcome {
	switch step {
	case "create_topic":
		c, cancel := ctx()
		defer cancel()
		value := "3600000"
		resp, err := w.adm.CreateTopic(c, 1, 1, map[string]*string{"retention.ms": &value}, w.topic)
		if err != nil {
			return errName(err)
		}
		return errName(resp.Err)
	case "describe_topic":
		return settled(w.topicState, func(seen outcome) bool { return field(seen, "error") == nil })
	case "describe_configs":
		return w.configs()
	case "alter_config":
		c, cancel := ctx()
		defer cancel()
		value := "7200000"
		resps, err := w.adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &value}}, w.topic)
		if err != nil {
			return errName(err)
		}
		for _, r := range resps {
			if r.Err != nil {
				return errName(r.Err)
			}
		}
		return "ok"
	case "read_back":
		seen := settled(w.configs, func(seen outcome) bool {
			v, _ := field(field(seen, "retention.ms"), "value").(*string)
			return v != nil && *v == "7200000"
		})
		if back := field(seen, "retention.ms"); back != nil {
			return back
		}
		return seen
	case "add_partitions":
		c, cancel := ctx()
		defer cancel()
		resps, err := w.adm.UpdatePartitions(c, 3, w.topic)
		if err != nil {
			return errName(err)
		}
		return errName(resps[w.topic].Err)
	case "describe_partitions":
		return settled(w.topicState, func(seen outcome) bool { return field(seen, "partitions") == 3 })
	case "create_acl":
		c, cancel := ctx()
		defer cancel()
		acl := kadm.NewACLs().Topics(w.topic).ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").AllowHosts("*").Operations(kadm.OpRead)
		results, err := w.adm.CreateACLs(c, acl)
		if err != nil {
			return errName(err)
		}
		for _, r := range results {
			if r.Err != nil {
				return errName(r.Err)
			}
		}
		return "ok"
	case "describe_acls":
		return settled(w.acls, func(seen outcome) bool { list, ok := seen.([]string); return ok && len(list) > 0 })
	case "delete_acls":
		c, cancel := ctx()
		defer cancel()
		results, err := w.adm.DeleteACLs(c, w.aclFilter())
		if err != nil {
			return errName(err)
		}
		deleted := []string{}
		for _, r := range results {
			if r.Err != nil {
				return errName(r.Err)
			}
			for _, d := range r.Deleted {
				if d.Err != nil {
					return errName(d.Err)
				}
				deleted = append(deleted, describeACL(d.Principal, d.Host, d.Operation, d.Permission, d.Type, d.Name, d.Pattern))
			}
		}
		sort.Strings(deleted)
		return deleted
	case "acls_after_delete":
		return settled(w.acls, empty)
	case "describe_cluster":
		m := w.brokerMetadata()
		c, cancel := ctx()
		defer cancel()
		meta, _ := w.adm.BrokerMetadata(c)
		cluster, id := w.describeCluster()
		if m.err != nil || cluster.err != nil {
			return map[string]any{"metadata": m.outcome(), "describe_cluster": cluster.outcome()}
		}
		return map[string]any{
			"cluster_id":           id,
			"metadata_cluster_id":  meta.Cluster,
			"controller_is_a_node": contains(m.ids, m.controller) && contains(cluster.ids, cluster.controller),
		}
	case "refused":
		ocl, oadm := client(w.bootstrap, w.outsider[0], w.outsider[1])
		defer ocl.Close()
		c, cancel := ctx()
		defer cancel()
		resp, err := oadm.CreateTopic(c, 1, 1, nil, w.topic+"-refused")
		if err != nil {
			return errName(err)
		}
		return errName(resp.Err)
	case "delete_topic":
		c, cancel := ctx()
		defer cancel()
		resp, err := w.adm.DeleteTopic(c, w.topic)
		if err != nil {
			return errName(err)
		}
		return errName(resp.Err)
	case "after_delete":
		return settled(w.topicState, func(seen outcome) bool { return field(seen, "error") != nil })
	case "broker_list":
		return w.brokerList()
	case "broker_configs":
		return w.brokerConfigs()
	case "client_quotas":
		return w.clientQuotas()
	case "scram_credentials":
		return w.scramCredentials()
	case "elect_leaders":
		return w.electLeaders()
	case "list_reassignments":
		return w.listReassignments()
	}
	fmt.Fprintln(os.Stderr, "unknown step", step)
	os.Exit(2)
	return nil
}

func contains(ids []int32, id int32) bool {
	for _, i := range ids {
		if i == id {
			return true
		}
	}
	return false
}
