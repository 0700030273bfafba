package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

// cluster is the local workers, each on a fixed loopback port for its whole
// run (a restarted worker comes back on the same one, so Prometheus keeps
// one series per worker).
type cluster struct {
	bin, conn, dir string
	shards         int
	ports          map[string]int
	procs          map[string]*exec.Cmd
	exited         map[string]chan struct{}
}

func (c *cluster) start(id string) error {
	if c.ports == nil {
		c.ports, c.procs, c.exited = map[string]int{}, map[string]*exec.Cmd{}, map[string]chan struct{}{}
	}
	port, ok := c.ports[id]
	if !ok {
		// Held for dashshot's life (the lock goes with the process): a
		// restarted worker listens on its port again, Prometheus's target.
		p, _, err := azuritetest.HoldPort()
		if err != nil {
			return err
		}
		port, c.ports[id] = p, p
	}
	logf, err := os.OpenFile(filepath.Join(c.dir, id+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.bin, "--identity", id, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--container", "dashshot", "--shards", fmt.Sprint(c.shards), "--log-format", "json")
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+c.conn)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	c.procs[id], c.exited[id] = cmd, done
	say("started %s on 127.0.0.1:%d (pid %d)", id, port, cmd.Process.Pid)
	return nil
}

func (c *cluster) signal(id string, sig syscall.Signal) {
	if p := c.procs[id]; p != nil {
		_ = p.Process.Signal(sig)
	}
}

// wait waits (bounded) for id's process to exit.
func (c *cluster) wait(id string, timeout time.Duration) error {
	select {
	case <-c.exited[id]:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not exit within %s", id, timeout)
	}
}

func (c *cluster) stopAll() {
	for id, p := range c.procs {
		_ = p.Process.Signal(syscall.SIGCONT)
		_ = p.Process.Signal(syscall.SIGKILL)
		<-c.exited[id]
	}
}

// ids lists the workers, sorted.
func (c *cluster) ids() []string {
	ids := make([]string, 0, len(c.ports))
	for id := range c.ports {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// targets maps each worker's identity to its scrape address.
func (c *cluster) targets() map[string]string {
	out := map[string]string{}
	for id, p := range c.ports {
		out[id] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	return out
}

// awaitLeader polls the workers' /status (bounded) until one other than not
// says it leads, and returns it.
func (c *cluster) awaitLeader(ctx context.Context, not string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, id := range c.ids() {
			if id == not {
				continue
			}
			var st struct {
				Role string `json:"role"`
			}
			if err := getJSON(ctx, fmt.Sprintf("http://127.0.0.1:%d/status", c.ports[id]), &st); err == nil && st.Role == "leader" {
				return id, nil
			}
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no leader (other than %q) within %s", not, timeout)
}

// follower returns a worker other than leader.
func (c *cluster) follower(leader string) string {
	for _, id := range c.ids() {
		if id != leader {
			return id
		}
	}
	return ""
}
