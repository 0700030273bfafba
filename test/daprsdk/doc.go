// Package daprsdk proves "Dapr's clients work" with Dapr's clients: the
// official JavaScript SDK (@dapr/dapr, pinned in package.json, run by node
// from test/daprsdk/js, unchanged, pointed at the service by its own
// endpoint variables) over HTTP and over gRPC, and — because PyPI, NuGet
// and Maven are out of reach here — grpc-go replaying the Python SDK's
// calls with Dapr's generated messages, against the real `blobleader
// locks` binary on Azurite. Helpers in this file are shared by the lock
// scenarios (test/scenarios) that mix SDK clients with curl-style ones.
package daprsdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// Step is one line the JS application printed: a step's name and what the
// SDK returned.
type Step struct {
	Step   string          `json:"step"`
	Result json.RawMessage `json:"result"`
}

// Protocol is how the JS SDK talks to the sidecar.
type Protocol string

const (
	HTTP Protocol = "http"
	GRPC Protocol = "grpc"
)

// repoRoot is the repository's root (test/daprsdk/../..).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Node is how to run a script with the pinned SDK: the node binary and the
// script's path; an error names what is missing (make node_modules).
func Node(script string) (node, path string, err error) {
	root := repoRoot()
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@dapr", "dapr", "package.json")); err != nil {
		return "", "", fmt.Errorf("@dapr/dapr is not installed in %s/node_modules (run make node_modules): %w", root, err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("node not found: %w", err)
	}
	return node, filepath.Join(root, "test", "daprsdk", "js", script), nil
}

// Endpoint is a running lock service as the SDKs find it: the values of
// DAPR_HTTP_ENDPOINT, DAPR_GRPC_ENDPOINT and DAPR_API_TOKEN.
type Endpoint struct {
	HTTP, GRPC, Token string
}

// env is the SDK's environment for e: only its own variables set, from
// this process's environment without any DAPR_ variable.
func (e Endpoint) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if len(kv) < 5 || kv[:5] != "DAPR_" {
			env = append(env, kv)
		}
	}
	env = append(env, "DAPR_HTTP_ENDPOINT="+e.HTTP, "DAPR_GRPC_ENDPOINT="+e.GRPC)
	if e.Token != "" {
		env = append(env, "DAPR_API_TOKEN="+e.Token)
	}
	return env
}

// RunLockSteps runs js/locksteps.js (the steps through the SDK) on
// resource of store over protocol, and returns its lines and its output.
func RunLockSteps(ctx context.Context, e Endpoint, p Protocol, store, resource string) ([]Step, string, error) {
	node, script, err := Node("locksteps.js")
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, string(p), store, resource)
	cmd.Env = e.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var steps []Step
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		var s Step
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.Step != "" {
			steps = append(steps, s)
		}
	}
	if err != nil {
		return steps, out.String(), fmt.Errorf("node locksteps.js %s: %w", p, err)
	}
	return steps, out.String(), nil
}
