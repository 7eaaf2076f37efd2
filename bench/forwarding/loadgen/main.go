// Command loadgen drives and stands in for Kafka endpoints for bench/forwarding.
//
//	loadgen client --target HOST:PORT --connections N --duration 10s [--warmup 2s]
//	        [--user alice --password alice-secret] [--envelope --principal User:alice]
//	loadgen upstream --listen 127.0.0.1:0 [--node-id 1]
//
// client prints one JSON report on stdout; upstream prints {"listening": "host:port"} and serves until killed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen client|upstream [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "client":
		clientMain(os.Args[2:])
	case "upstream":
		upstreamMain(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q: client or upstream\n", os.Args[1])
		os.Exit(2)
	}
}

func clientMain(args []string) {
	flags := flag.NewFlagSet("client", flag.ExitOnError)
	opts := clientOptions{}
	var host string
	flags.StringVar(&opts.target, "target", "", "host:port to send to")
	flags.IntVar(&opts.connections, "connections", 1, "connections, each with one request in flight")
	flags.DurationVar(&opts.duration, "duration", 10*time.Second, "measured time")
	flags.DurationVar(&opts.warmup, "warmup", 2*time.Second, "time before measuring")
	flags.StringVar(&opts.user, "user", "", "SASL/PLAIN user (none: no login)")
	flags.StringVar(&opts.password, "password", "", "SASL/PLAIN password")
	flags.BoolVar(&opts.envelope, "envelope", false, "wrap each CreateTopics in an Envelope, as a forwarding broker does")
	flags.StringVar(&opts.principal, "principal", "User:alice", "the forwarded principal (with --envelope)")
	flags.StringVar(&host, "client-host", "127.0.0.1", "the forwarded client address (with --envelope)")
	flags.StringVar(&opts.topicPrefix, "topic-prefix", "bench", "topic names are PREFIX-<connection>-<sequence>")
	_ = flags.Parse(args)
	if opts.target == "" || opts.connections < 1 || opts.duration <= 0 {
		fmt.Fprintln(os.Stderr, "client needs --target, --connections >= 1 and --duration > 0")
		os.Exit(2)
	}
	ip := net.ParseIP(host)
	if ip == nil {
		fmt.Fprintf(os.Stderr, "--client-host %q is not an IP address\n", host)
		os.Exit(2)
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	opts.clientHost = ip
	report := runClient(opts)
	report.GoMaxProcs = runtime.GOMAXPROCS(0)
	out, _ := json.Marshal(report)
	fmt.Println(string(out))
	if report.Requests == 0 {
		os.Exit(1)
	}
}

func upstreamMain(args []string) {
	flags := flag.NewFlagSet("upstream", flag.ExitOnError)
	listen := flags.String("listen", "127.0.0.1:0", "address to listen on")
	nodeID := flags.Int("node-id", 1, "the node id it gives itself as the active controller")
	clusterID := flags.String("cluster-id", "zero-work-upstream", "the cluster id in DescribeCluster")
	_ = flags.Parse(args)
	if err := runUpstream(*listen, int32(*nodeID), *clusterID); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
