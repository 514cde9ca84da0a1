package testredis

import (
	"fmt"
	"strings"
	"time"

	"github.com/mediagw/mediagw/internal/testport"
)

// Cluster is a Redis Cluster that a test started on loopback, each node a Server with its own
// directory, AOF on and fsync always.
type Cluster struct {
	// Nodes are the masters; node i serves the i-th equal share of the 16384 slots.
	Nodes []*Server
	// Replicas are the replicas: Replicas[i] replicates Nodes[i].
	Replicas []*Server
}

// StartCluster starts n masters with cluster-enabled, gives each its slots, introduces them to
// each other (CLUSTER ADDSLOTSRANGE, CLUSTER MEET, CLUSTER REPLICATE: what redis-cli --cluster
// create does), gives each master one replica when withReplicas is true, and waits until every
// node reports cluster_state:ok (and every replica is in sync). The nodes stop when the test
// ends.
func StartCluster(tb TB, n int, withReplicas bool) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("a cluster needs at least one node")
	}
	c := &Cluster{}
	start := func() *Server {
		bus := testport.Reserve(tb)
		return Start(tb, Options{Args: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
			// The bus port is chosen here: the default (port+10000) may be past 65535.
			"--cluster-port", fmt.Sprint(bus),
			// A replica's first sync starts at once, not after a 5 s wait for more replicas.
			"--repl-diskless-sync-delay", "0",
		}})
	}
	for range n {
		c.Nodes = append(c.Nodes, start())
		if withReplicas {
			c.Replicas = append(c.Replicas, start())
		}
	}
	const slots = 16384
	for i, node := range c.Nodes {
		first, last := i*slots/n, (i+1)*slots/n-1
		if err := node.Do("CLUSTER", "ADDSLOTSRANGE", fmt.Sprint(first), fmt.Sprint(last)).Error(); err != nil {
			tb.Fatalf("CLUSTER ADDSLOTSRANGE on %s: %v", node.Addr, err)
		}
	}
	all := append(append([]*Server{}, c.Nodes...), c.Replicas...)
	for _, node := range all[1:] {
		host, port, _ := strings.Cut(node.Addr, ":")
		if err := c.Nodes[0].Do("CLUSTER", "MEET", host, port, busPort(node)).Error(); err != nil {
			tb.Fatalf("CLUSTER MEET %s: %v", node.Addr, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for i, replica := range c.Replicas {
		id, err := c.Nodes[i].Do("CLUSTER", "MYID").ToString()
		if err != nil {
			tb.Fatalf("CLUSTER MYID: %v", err)
		}
		// The replica must have heard of its master before it can follow it.
		for {
			err := replica.Do("CLUSTER", "REPLICATE", id).Error()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("CLUSTER REPLICATE on %s: %v", replica.Addr, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, replica := range c.Replicas {
		replica.WaitLinkUp(tb, deadline)
	}
	for _, node := range all {
		for {
			info, err := node.Do("CLUSTER", "INFO").ToString()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d\r\n", len(all))) {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("the cluster did not form: %s: %q, %v", node.Addr, info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// URL is a redis:// URL that names every node (the first as the host, the others as addr
// parameters).
func (c *Cluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr
	for i, node := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + node.Addr
	}
	return u
}

// busPort is the cluster bus port a node was started with.
func busPort(s *Server) string {
	for i, a := range s.opts.Args {
		if a == "--cluster-port" && i+1 < len(s.opts.Args) {
			return s.opts.Args[i+1]
		}
	}
	return ""
}
