package dev

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Node is one `moldau serve` child process in combined mode (broker and
// controller), with a proxy in front of each of its three listeners.
type Node struct {
	ID  int32
	Dir string // its log.dirs; its output goes to Dir/../node-N.log

	// The node's own ports, and the proxies the others and the clients
	// reach it through (what it advertises).
	clientPort, replicationPort, controllerPort int
	clientProxy, replicationProxy, ctrlProxy    *Proxy
	// faultPort is the node's dev control listener (loopback): its disk
	// delay is set there (see SlowDisk).
	faultPort int

	// diskDelay is the delay of every write and fsync of the node's
	// partition logs; it survives a restart.
	diskDelay atomic.Int64

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	state   string        // "starting", "running", "stopping", "stopped", "killed", "exited"
	started time.Time
}

// NodeState is a node as the API shows it.
type NodeState struct {
	ID int32 `json:"id"`
	// State: running (the process is up), stopped (SIGTERM and exited),
	// killed (SIGKILL), exited (on its own).
	State           string `json:"state"`
	PID             int    `json:"pid,omitempty"`
	ClientAddr      string `json:"client_addr"`      // the proxy clients use
	ClientPort      int    `json:"client_port"`      // the node's own listener
	ReplicationAddr string `json:"replication_addr"` // the proxy peers use
	ControllerAddr  string `json:"controller_addr"`  // the proxy voters use
	Dir             string `json:"dir"`
	CutFromPeers    bool   `json:"cut_from_peers"`
	CutFromClients  bool   `json:"cut_from_clients"`
	// DiskDelayMs is the delay of each write and fsync of its partition
	// logs (moldau dev slow); 0: a normal disk.
	DiskDelayMs int64 `json:"disk_delay_ms"`
}

// Cluster is the dev cluster: its nodes, their proxies and the network
// state the proxies share.
type Cluster struct {
	Nodes  []*Node
	Net    *Network
	dir    string
	exe    string
	extra  []string // overrides every node gets
	events *EventLog
}

// ClusterConfig is how a cluster starts.
type ClusterConfig struct {
	Nodes int
	Dir   string // the data folder (exists)
	Exe   string // the moldau binary
	// Overrides are Kafka properties every node gets (key=value).
	Overrides []string
}

// FreePort picks a free loopback port for a listener bound a moment
// later, never the same twice in this process. It is chosen below the
// kernel's ephemeral range (ip_local_port_range), so that no socket bound
// to port 0 and no outgoing connection takes it meanwhile: picked from
// the ephemeral range, two listeners of one cluster were given the same
// port (the kernel hands a port just closed out again), and the node that
// lost exited.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	lo, hi := 10000, ephemeralLow()
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		if portsGiven[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		l.Close()
		portsGiven[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port found between %d and %d", lo, hi)
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// where it cannot be read, or when it leaves too little below it).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo int
	if _, err := fmt.Sscan(string(b), &lo); err != nil || lo < 20000 {
		return 32768
	}
	return lo
}

func newCluster(cfg ClusterConfig, events *EventLog) (*Cluster, error) {
	c := &Cluster{dir: cfg.Dir, exe: cfg.Exe, extra: cfg.Overrides, events: events}
	c.Net = newNetwork(func(l Link, response bool, key int16) {
		what := "request"
		if response {
			what = "response"
		}
		events.Add("fault", fmt.Sprintf("%s lost on %s", what, l), map[string]any{"link": l, "response": response, "api_key": key})
	})
	for i := range cfg.Nodes {
		n := &Node{ID: int32(i + 1), Dir: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i+1)), state: "stopped"}
		var err error
		for _, p := range []*int{&n.clientPort, &n.replicationPort, &n.controllerPort, &n.faultPort} {
			if *p, err = FreePort(); err != nil {
				c.Close()
				return nil, err
			}
		}
		local := func(port int) func() string { return func() string { return fmt.Sprintf("127.0.0.1:%d", port) } }
		if n.clientProxy, err = newProxy(c.Net, n.ID, true, local(n.clientPort)); err == nil {
			if n.replicationProxy, err = newProxy(c.Net, n.ID, false, local(n.replicationPort)); err == nil {
				n.ctrlProxy, err = newProxy(c.Net, n.ID, false, local(n.controllerPort))
			}
		}
		c.Nodes = append(c.Nodes, n)
		if err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// overrides are node n's properties: three listeners on its own ports,
// advertised (and, for the controllers, dialled) through the proxies.
func (c *Cluster) overrides(n *Node) []string {
	var voters []string
	for _, o := range c.Nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", o.ID, o.ctrlProxy.Addr()))
	}
	return append([]string{
		fmt.Sprintf("node.id=%d", n.ID),
		"process.roles=broker,controller",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,REPLICATION://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.clientPort, n.replicationPort, n.controllerPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://%s,REPLICATION://%s", n.clientProxy.Addr(), n.replicationProxy.Addr()),
		"inter.broker.listener.name=REPLICATION",
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.voters=" + strings.Join(voters, ","),
		"log.dirs=" + n.Dir,
		"moldau.metrics.listener=",
	}, c.extra...)
}

// Start starts node id's process (it must not be running).
func (c *Cluster) Start(id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %d is %s", id, n.state)
	}
	args := []string{"serve", "--log-level", "info"}
	for _, o := range c.overrides(n) {
		args = append(args, "--override", o)
	}
	out, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("node-%d.log", id)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.exe, args...)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("%s=127.0.0.1:%d", FaultControlEnv, n.faultPort),
		fmt.Sprintf("%s=%v", DiskDelayEnv, time.Duration(n.diskDelay.Load())))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		out.Close()
		return err
	}
	n.cmd, n.exited, n.state, n.started = cmd, make(chan struct{}), "running", time.Now()
	exited := n.exited
	go func() {
		err := cmd.Wait()
		out.Close()
		n.mu.Lock()
		if n.cmd == cmd {
			n.cmd = nil
			if n.state == "running" {
				n.state = "exited"
				c.events.Add("node", fmt.Sprintf("node %d exited on its own: %v", id, err), map[string]any{"node": id})
			}
		}
		n.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Kill sends SIGKILL to node id and waits for it to exit.
func (c *Cluster) Kill(id int32) error { return c.signal(id, syscall.SIGKILL, "killed", 5*time.Second) }

// Stop sends SIGTERM (a controlled shutdown) and waits for the exit.
func (c *Cluster) Stop(id int32) error {
	return c.signal(id, syscall.SIGTERM, "stopped", 30*time.Second)
}

func (c *Cluster) signal(id int32, sig syscall.Signal, state string, wait time.Duration) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	if n.cmd == nil {
		n.mu.Unlock()
		return fmt.Errorf("node %d is not running (%s)", id, n.state)
	}
	cmd, exited := n.cmd, n.exited
	n.state = state
	n.cmd = nil
	n.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(wait):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("node %d did not exit within %v of %v: killed", id, wait, sig)
	}
}

// The environment `moldau dev` gives its nodes, which `moldau serve`
// reads (cmd/moldau/serve_devfault.go); no other broker has it.
const (
	// FaultControlEnv is a loopback host:port where the node serves
	// GET and PUT /disk-delay?delay=200ms, and the switch that runs its
	// partition logs (log.dirs) through a log.DelayFS.
	FaultControlEnv = "MOLDAU_DEV_FAULT_CONTROL"
	// DiskDelayEnv is the delay the node starts with (a Go duration).
	DiskDelayEnv = "MOLDAU_DEV_DISK_DELAY"
)

// SlowDisk sets the delay of every write and fsync of node id's
// partition logs (0: none). A running node is told at once through its
// control listener; a stopped one starts with it; it survives restarts.
func (c *Cluster) SlowDisk(ctx context.Context, id int32, delay time.Duration) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if delay < 0 || delay > time.Minute {
		return fmt.Errorf("delay %v: want 0 to 1m", delay)
	}
	n.mu.Lock()
	defer n.mu.Unlock() // a start or stop waits for the node to be told
	n.diskDelay.Store(int64(delay))
	if n.cmd == nil {
		return nil
	}
	// The node opens its listener before its broker starts: a node that
	// has just started may need a moment.
	return poll(ctx, 5*time.Second, func() error {
		url := fmt.Sprintf("http://127.0.0.1:%d/disk-delay?delay=%v", n.faultPort, delay)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("node %d's dev control: %w", id, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("node %d's dev control: %s", id, resp.Status)
		}
		return nil
	})
}

// Restart stops node id if it runs (SIGTERM) and starts it again.
func (c *Cluster) Restart(id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	running := n.cmd != nil
	n.mu.Unlock()
	if running {
		if err := c.Stop(id); err != nil {
			return err
		}
	}
	return c.Start(id)
}

func (c *Cluster) node(id int32) (*Node, error) {
	if id < 1 || int(id) > len(c.Nodes) {
		return nil, fmt.Errorf("no node %d (nodes 1 to %d)", id, len(c.Nodes))
	}
	return c.Nodes[id-1], nil
}

// States is every node's state.
func (c *Cluster) States() []NodeState {
	peers, clients := c.Net.Cuts()
	has := func(s []int32, id int32) bool {
		for _, x := range s {
			if x == id {
				return true
			}
		}
		return false
	}
	out := make([]NodeState, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		n.mu.Lock()
		s := NodeState{ID: n.ID, State: n.state, ClientAddr: n.clientProxy.Addr(), ClientPort: n.clientPort,
			ReplicationAddr: n.replicationProxy.Addr(), ControllerAddr: n.ctrlProxy.Addr(), Dir: n.Dir,
			CutFromPeers: has(peers, n.ID), CutFromClients: has(clients, n.ID),
			DiskDelayMs: time.Duration(n.diskDelay.Load()).Milliseconds()}
		if n.cmd != nil {
			s.PID = n.cmd.Process.Pid
		}
		n.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// Seeds are the client proxies' addresses.
func (c *Cluster) Seeds() []string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, n.clientProxy.Addr())
	}
	return s
}

// Controllers are the controller proxies' addresses: the voters' as
// controller.quorum.voters names them, and so as the quorum's leader
// names itself in a Fetch answer (NodeEndpoints).
func (c *Cluster) Controllers() []string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, n.ctrlProxy.Addr())
	}
	return s
}

// Direct maps a client or controller proxy's address to the node's own
// listener, for the dev process's own observers (the console, the log
// checks), which must see a node that is cut off from the clients or
// its peers.
func (c *Cluster) Direct(addr string) string {
	for _, n := range c.Nodes {
		switch addr {
		case n.clientProxy.Addr():
			return fmt.Sprintf("127.0.0.1:%d", n.clientPort)
		case n.ctrlProxy.Addr():
			return fmt.Sprintf("127.0.0.1:%d", n.controllerPort)
		}
	}
	return addr
}

// DirectDialer is a kgo dialer that reaches the nodes without proxies.
func (c *Cluster) DirectDialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		return d.DialContext(ctx, network, c.Direct(host))
	}
}

// Close stops every running node (SIGTERM, and SIGKILL for those still
// up after 15s: the last nodes of a stopping quorum cannot finish a
// controlled shutdown) and the proxies.
func (c *Cluster) Close() error {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		n.mu.Lock()
		running := n.cmd != nil
		n.mu.Unlock()
		if running {
			wg.Go(func() { c.signal(n.ID, syscall.SIGTERM, "stopped", 15*time.Second) })
		}
	}
	wg.Wait()
	for _, n := range c.Nodes {
		for _, p := range []*Proxy{n.clientProxy, n.replicationProxy, n.ctrlProxy} {
			if p != nil {
				p.Close()
			}
		}
	}
	return nil
}
