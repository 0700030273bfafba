package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

// envOrphanChild makes TestLocal_OrphanCheckChild the child of
// TestLocal_ClusterDiesWithAKilledTestProcess.
const envOrphanChild = "BLOBLEADER_ORPHAN_CHECK_CHILD"

// A cluster's processes die with the test process that started them,
// however it ends: here SIGKILL, which no cleanup can catch (go test's
// -timeout panic and ^C end it as abruptly for the workers). A `make chaos`
// ended by its timeout once left five --shards workers running under init
// for an hour. The child test process starts a cluster (two workers and
// Azurite), prints their pids and waits to be killed.
func TestLocal_ClusterDiesWithAKilledTestProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLocal_OrphanCheckChild$", "-test.v", "-test.count=1")
	child.Env = append(os.Environ(), envOrphanChild+"=1")
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()

	pids := make(chan []int, 1)
	var said strings.Builder // the child's output, for a failure message
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			said.WriteString(sc.Text() + "\n")
			if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ORPHAN-CHECK PIDS "); ok {
				var ps []int
				for _, f := range strings.Fields(rest) {
					if p, err := strconv.Atoi(f); err == nil {
						ps = append(ps, p)
					}
				}
				pids <- ps
			}
		}
		close(pids)
	}()
	var ps []int
	select {
	case ps = <-pids:
	case <-ctx.Done():
	}
	if len(ps) != 3 {
		_ = child.Process.Kill()
		_ = child.Wait() // the scanner has read all the child said
		t.Fatalf("the child did not report its cluster's pids (workers and Azurite): %v; it said:\n%s", ps, said.String())
	}
	for _, p := range ps {
		if !chaos.ProcAlive(p) {
			t.Fatalf("pid %d of the child's cluster is not running before the kill", p)
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var alive []int
		for _, p := range ps {
			if chaos.ProcAlive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("pids %v of the cluster (workers, Azurite: %v) still run 10 s after their test process was SIGKILLed", alive, ps)
		}
	}
}

// TestLocal_OrphanCheckChild is the child process of
// TestLocal_ClusterDiesWithAKilledTestProcess, not a test of its own.
func TestLocal_OrphanCheckChild(t *testing.T) {
	if os.Getenv(envOrphanChild) == "" {
		t.Skip("the child of TestLocal_ClusterDiesWithAKilledTestProcess; runs only as that test's child process")
	}
	c, ws := fakeCluster(t, 2)
	var ps []string
	for _, w := range ws {
		inc, _ := w.(*localWorker).current()
		ps = append(ps, strconv.Itoa(inc.cmd.Process.Pid))
	}
	ps = append(ps, strconv.Itoa(c.Azurite().Pid()))
	fmt.Printf("ORPHAN-CHECK PIDS %s\n", strings.Join(ps, " "))
	// Bounded: the parent kills us long before this.
	time.Sleep(90 * time.Second)
	t.Fatal("the parent did not kill this child within 90 s")
}
