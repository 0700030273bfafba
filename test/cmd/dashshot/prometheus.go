package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/azuritetest"
)

type prometheus struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startPrometheus runs a real Prometheus on loopback scraping targets
// (identity → address) every 2 s as job "blobleader", with the rules loaded,
// and waits until it is ready.
func startPrometheus(ctx context.Context, bin, rules, dir string, targets map[string]string) (*prometheus, error) {
	rulesAbs, err := filepath.Abs(rules)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(targets))
	for id := range targets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: 2s\n  evaluation_interval: 2s\nrule_files:\n  - %q\nscrape_configs:\n  - job_name: blobleader\n    static_configs:\n", rulesAbs)
	for _, id := range ids {
		// instance = the worker's identity, so legends name workers.
		fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {instance: %q}\n", targets[id], id)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	port, _, err := azuritetest.HoldPort() // held for dashshot's life
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &prometheus{url: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	say("started Prometheus on %s (pid %d), scraping %d workers every 2s", addr, cmd.Process.Pid, len(ids))

	deadline := time.Now().Add(30 * time.Second)
	for {
		var r struct {
			Data struct {
				ActiveTargets []struct {
					Health string `json:"health"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		up := 0
		if err := getJSON(ctx, p.url+"/api/v1/targets", &r); err == nil {
			for _, t := range r.Data.ActiveTargets {
				if t.Health == "up" {
					up++
				}
			}
		}
		if up == len(ids) {
			return p, nil
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			return nil, fmt.Errorf("prometheus exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("prometheus did not scrape all %d workers within 30s (%d up)", len(ids), up)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			p.stop()
			return nil, err
		}
	}
}

func (p *prometheus) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
