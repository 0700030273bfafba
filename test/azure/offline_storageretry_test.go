//go:build azure

package azure

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/history"
)

// lingeringDenial passes requests to Azurite except that it answers 403
// AuthorizationFailure to the first `denials` ones, and cuts one download
// body short: what the harness sees right after the storage-outage fault
// lifted its network rule.
type lingeringDenial struct {
	mu      sync.Mutex
	denials int
	cut     bool
	n       int
}

func (l *lingeringDenial) Do(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.n++
	deny := l.denials > 0
	if deny {
		l.denials--
	}
	cut := l.cut && req.Method == http.MethodGet && strings.Contains(req.URL.Path, ".jsonl")
	if cut {
		l.cut = false
	}
	l.mu.Unlock()
	if deny {
		return &http.Response{StatusCode: http.StatusForbidden, Status: "403 This request is not authorized to perform this operation.",
			Header: http.Header{"X-Ms-Error-Code": {"AuthorizationFailure"}}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || !cut {
		return resp, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b[:len(b)/2]), errReader{io.ErrUnexpectedEOF}))
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// The history reads after the storage-outage scenario: storage keeps
// refusing for a while after the rule is lifted, and the SDK does not retry
// a 403. Every record written must still come back, and none twice.
func TestOffline_HistoryReadsSurviveLingering403s(t *testing.T) {
	old := storageBackoff
	storageBackoff = backoff{first: 5 * time.Millisecond, max: 20 * time.Millisecond}
	defer func() { storageBackoff = old }()

	writer := newContainer(t, "history")
	ctx := ctxT(t, 60*time.Second)
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	const perWorker = 40
	ids := []string{"ci-w-01", "ci-w-02"}
	for _, id := range ids {
		b := history.OpenBlob(writer, id, t0, history.BlobOptions{FlushEvery: 10 * time.Millisecond})
		for i := range perWorker {
			if err := b.Write(history.NewRecord(id, t0, election.Event{Kind: election.EventObservedLeader, Time: t0.Add(time.Duration(i) * time.Second), Term: int64(i + 1), Leader: "x"})); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}

	deny := &lingeringDenial{denials: 6, cut: true}
	opts := &container.ClientOptions{}
	opts.Transport = deny
	opts.Retry = policy.RetryOptions{MaxRetries: -1} // no SDK retries: every denial reaches the harness
	reader, err := container.NewClientFromConnectionString(sharedAzurite(t).ConnectionString(), containerNameOf(writer), opts)
	if err != nil {
		t.Fatal(err)
	}
	files, err := DownloadHistory(ctx, reader, ids, t.TempDir())
	if err != nil {
		t.Fatalf("DownloadHistory with a lingering denial: %v", err)
	}
	events, err := checker.ReadHistory(files...)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range events {
		seen[fmt.Sprintf("%s/%d", e.Identity, e.Term)]++
	}
	if len(events) != perWorker*len(ids) || len(seen) != perWorker*len(ids) {
		t.Fatalf("read %d events (%d distinct) back, want every one of the %d written exactly once", len(events), len(seen), perWorker*len(ids))
	}
	if deny.denials != 0 || deny.cut {
		t.Fatalf("the fault did not play out (denials left %d, cut pending %v): the test proves nothing", deny.denials, deny.cut)
	}

	// A denial that does not end fails when the caller's deadline does, with the cause.
	stuck := &lingeringDenial{denials: 1 << 30}
	opts.Transport = stuck
	reader, _ = container.NewClientFromConnectionString(sharedAzurite(t).ConnectionString(), containerNameOf(writer), opts)
	_, err = DownloadHistory(ctxT(t, 200*time.Millisecond), reader, ids, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a denial that never ends: %v, want an error carrying the 403", err)
	}
}

// When the caller's deadline ends an attempt in flight, the error still
// carries the last answer storage gave (the 403), not only "deadline
// exceeded": that is what the operator needs to see. (Seen flaking under
// load in TestOffline_HistoryReadsSurviveLingering403s before the fix.)
func TestOffline_RetryStorageReportsTheLastAnswerWhenTheDeadlineCutsAnAttempt(t *testing.T) {
	old := storageBackoff
	storageBackoff = backoff{first: time.Millisecond, max: time.Millisecond}
	defer func() { storageBackoff = old }()
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	err := retryStorage(ctx, "read", nil, func() error {
		attempts++
		if attempts == 1 {
			return &azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthorizationFailure"}
		}
		cancel() // the deadline ends the second attempt in flight
		return &net.OpError{Op: "dial", Err: context.Canceled}
	})
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("retryStorage: %v, want the last answer (403) in the error", err)
	}
}
