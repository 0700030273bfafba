package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/blobleader/blobleader/worker/azuritetest"
	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/history"
)

// secretProc is a worker whose every output a test reads: stdout, stderr,
// history file, HTTP endpoints.
type secretProc struct {
	name           string
	base           string // its HTTP endpoints
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	history        string // its --history file ("" with --history blob)
}

func startCaptured(t *testing.T, name, conn string, args ...string) *secretProc {
	t.Helper()
	p := &secretProc{name: name, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	full := []string{"--identity", name, "--listen", anyPort, "--connection-string", conn}
	if !strings.Contains(strings.Join(args, " "), "--history") {
		p.history = filepath.Join(t.TempDir(), name+".jsonl")
		full = append(full, "--history", p.history)
	}
	p.cmd = exec.Command(binary, append(full, args...)...)
	p.cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING=")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	p.base = startedURL(t, "worker "+name, p.stderr.String)
	awaitServing(t, p.base)
	return p
}

// await polls cond until it holds: timeout plus the measured stall
// (waitFor).
func await(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, timeout, func() (bool, string) { return cond(), "not yet" })
}

func body(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// No output of any command carries a secret: a SAS signature and an account
// key are planted in the connection strings of workers that lead, follow and
// fail (storage on a closed port), of run and of every subcommand, and
// every stdout, stderr (JSON and text), history (file and blob), /status,
// /healthz, /readyz, /metrics and error message is searched for them.
func TestSecrets_NoOutputCarriesAPlantedSecret(t *testing.T) {
	t.Parallel()
	az := azuritetest.StartT(t)
	key := azuritetest.AccountKey
	cred, err := azblob.NewSharedKeyCredential(azuritetest.Account, key)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.AccountSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
		Permissions:   (&sas.AccountPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true}).String(),
		ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	closed := azuritetest.ReservePort(t) // nothing listens there: storage refused
	wrongEndpoint := fmt.Sprintf("http://127.0.0.1:%d/%s", closed, azuritetest.Account)
	sasConn := func(endpoint string) string {
		return "BlobEndpoint=" + endpoint + ";SharedAccessSignature=" + qp.Encode()
	}
	secrets := map[string]string{
		"the SAS signature": qp.Signature(), "the SAS signature, URL-encoded": url.QueryEscape(qp.Signature()),
		"the account key": key, "the account key, URL-encoded": url.QueryEscape(key),
	}
	outputs := map[string]string{} // what → text

	// Workers: a leader (SAS, JSON), a follower (key, text, history to
	// blob), and two whose storage is a closed port (SAS and key).
	leader := startCaptured(t, "sas-leader", sasConn(az.BlobEndpoint()), "--log-format", "json")
	awaitRole(t, leader.base, "leader")
	follower := startCaptured(t, "key-follower", az.ConnectionString(), "--log-format", "text", "--history", "blob")
	failingSAS := startCaptured(t, "sas-failing", sasConn(wrongEndpoint), "--log-format", "json")
	failingKey := startCaptured(t, "key-failing", azuritetest.ConnectionString(wrongEndpoint), "--log-format", "text")
	await(t, 10*time.Second, "the follower sees the leader", func() bool { return getStatus(t, follower.base)["leader"] == "sas-leader" })
	for _, p := range []*secretProc{failingSAS, failingKey} {
		await(t, 10*time.Second, p.name+" records failed acquires", func() bool {
			return strings.Count(fileText(t, p.history), `"acquire_failed"`) >= 2
		})
	}
	procs := []*secretProc{leader, follower, failingSAS, failingKey}
	for _, p := range procs {
		for _, path := range []string{"/status", "/healthz", "/readyz", "/metrics"} {
			outputs[p.name+" "+path] = body(t, p.base+path)
		}
	}

	// Subcommands, each with the SAS and with the key, working and failing.
	for _, conn := range []string{sasConn(az.BlobEndpoint()), sasConn(wrongEndpoint), az.ConnectionString(), azuritetest.ConnectionString(wrongEndpoint)} {
		for _, args := range [][]string{
			{"ledger", "--verify", "--timeout", "3s"}, {"ledger", "--json", "--timeout", "3s"}, {"shards", "--timeout", "3s"},
			{"recover-term", "--floor", "1", "--timeout", "3s"},
		} {
			code, stdout, stderr := runBinary(t, nil, append(args, "--connection-string", conn)...)
			outputs[fmt.Sprintf("%v (exit %d) against %s", args, code, conn)] = stdout + stderr
		}
	}
	code, stdout, stderr := runBinary(t, nil, "status", "--url", leader.base)
	outputs[fmt.Sprintf("status (exit %d)", code)] = stdout + stderr
	runHistory := filepath.Join(t.TempDir(), "run.jsonl")
	code, stdout, stderr = runBinary(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, "run", "--once", "--identity", "sas-run", "--listen", "127.0.0.1:0", "--blob", "run-lock",
		"--connection-string", sasConn(az.BlobEndpoint()), "--history", runHistory, "--log-format", "json", "--", "true")
	outputs[fmt.Sprintf("run --once (exit %d)", code)] = stdout + stderr + fileText(t, runHistory)
	// A connection string whose key does not decode: the refusal must not
	// echo it.
	code, stdout, stderr = runBinary(t, []string{"AZURE_STORAGE_CONNECTION_STRING="}, "--connection-string", "AccountName=a;AccountKey="+key+"*")
	outputs[fmt.Sprintf("a malformed key (exit %d)", code)] = stdout + stderr

	// A forced loss on the leader (recover-term above its term) logs and
	// records the loss; then every worker stops gracefully.
	code, stdout, stderr = runBinary(t, nil, "recover-term", "--floor", "9000000000000", "--connection-string", sasConn(az.BlobEndpoint()))
	outputs[fmt.Sprintf("recover-term (exit %d)", code)] = stdout + stderr
	await(t, 20*time.Second, "the leader records its loss", func() bool { return strings.Contains(fileText(t, leader.history), `"stopped_leading"`) })
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not stop within 20s of SIGTERM", p.name)
		}
		outputs[p.name+" stdout"], outputs[p.name+" stderr"] = p.stdout.String(), p.stderr.String()
		if p.history != "" {
			outputs[p.name+" history"] = fileText(t, p.history)
		}
	}
	outputs["the history container"] = historyBlobs(t, az.ConnectionString())

	// Evidence that the outputs hold what a leak would be in.
	for what, want := range map[string]string{
		"sas-leader stderr": `"lock":"blob leases/leader"`, "sas-leader history": `"stopped_leading"`,
		"sas-failing history": "acquire_failed", "key-failing history": "acquire_failed",
		"the history container": "key-follower",
	} {
		if !strings.Contains(outputs[what], want) {
			t.Errorf("%s does not hold %q:\n%s", what, want, outputs[what])
		}
	}
	for what, text := range outputs {
		for name, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s carries %s:\n…%s…", what, name, text[max(0, i-200):min(len(text), i+len(secret)+40)])
			}
		}
	}
}

// historyBlobs is the text of every blob in the history container.
func historyBlobs(t *testing.T, conn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: conn, Container: history.Container, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			resp, err := c.NewBlobClient(*b.Name).DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			all.WriteString(*b.Name + "\n")
			all.Write(data)
		}
	}
	return all.String()
}

func stopProc(t *testing.T, p *secretProc) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop within 20s of SIGTERM", p.name)
	}
}
