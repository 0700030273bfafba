// Command lockclient is one client of the lock service in the lock
// scenarios (test/scenarios/locks.go): it takes named locks over HTTP,
// writes to each resource's fenced ledger (worker/ledger) under the term it
// got, and logs its own timestamped lines — got, wrote, renewed, unlocked,
// lost — as JSON, one a line, which the checker (test/checker/locks.go)
// judges per resource. It stops after --rounds or --duration.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/ledger"
	"github.com/blobleader/blobleader/worker/mutex"
)

type options struct {
	urls       []string
	store      string
	owner      string
	resources  int
	resource   string
	rounds     int
	duration   time.Duration
	seed       uint64
	expiry     int
	wait       int
	writes     int
	writeEvery time.Duration
	renewEvery time.Duration
	margin     time.Duration
	conn       string
	container  string
	out        string
}

func main() {
	var o options
	var urls string
	flag.StringVar(&urls, "urls", "", "comma-separated service base URLs (replicas), e.g. http://127.0.0.1:3500")
	flag.StringVar(&o.store, "store", "lockstore", "store name")
	flag.StringVar(&o.owner, "owner", "", "lockOwner (this client's name)")
	flag.IntVar(&o.resources, "resources", 3, "how many resources to contend for (res-0 …)")
	flag.StringVar(&o.resource, "resource", "", "contend for this one resource only (instead of --resources)")
	flag.IntVar(&o.rounds, "rounds", 20, "lock attempts, then exit")
	flag.DurationVar(&o.duration, "duration", time.Minute, "stop after this long, rounds or not")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed")
	flag.IntVar(&o.expiry, "expiry", 15, "expiryInSeconds")
	flag.IntVar(&o.wait, "wait", 10, "waitSeconds")
	flag.IntVar(&o.writes, "writes", 5, "ledger appends per holding")
	flag.DurationVar(&o.writeEvery, "write-every", 200*time.Millisecond, "pause between appends")
	flag.DurationVar(&o.renewEvery, "renew-every", 2*time.Second, "renew (with the term) when this long passed since the last")
	flag.DurationVar(&o.margin, "margin", 2*time.Second, "believe until send + expiry − margin")
	flag.StringVar(&o.conn, "connection-string", "", "storage of the ledgers")
	flag.StringVar(&o.container, "container", "", "container of the ledgers")
	flag.StringVar(&o.out, "out", "", "file for this client's own lines (JSONL)")
	flag.Parse()
	o.urls = strings.Split(urls, ",")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "lockclient:", err)
		os.Exit(1)
	}
}

// line is one of the client's own lines (checker.LockLine reads them).
type line struct {
	Client     string    `json:"client"`
	Ev         string    `json:"ev"`
	Resource   string    `json:"resource,omitempty"`
	Term       int64     `json:"term,omitempty"`
	T          time.Time `json:"t"`
	ValidUntil time.Time `json:"valid_until,omitzero"`
	Seq        int64     `json:"seq,omitempty"`
	Done       time.Time `json:"done,omitzero"`
	Status     int       `json:"status,omitempty"`
	Reason     string    `json:"reason,omitempty"`
}

type client struct {
	o    options
	out  *os.File
	mu   sync.Mutex
	hc   *http.Client
	next int // replica to try first
	rng  *rand.Rand
}

func (c *client) log(l line) {
	l.Client = c.o.owner
	b, _ := json.Marshal(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.out.Write(append(b, '\n'))
}

func run(o options) error {
	out, err := os.OpenFile(o.out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cc, err := bloblock.NewContainerClient(bloblock.ClientConfig{ConnectionString: o.conn, Container: o.container, RequestTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	c := &client{o: o, out: out, hc: &http.Client{Timeout: time.Duration(o.wait)*time.Second + 5*time.Second},
		rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	for round := 0; round < o.rounds && ctx.Err() == nil; round++ {
		res := o.resource
		if res == "" {
			res = fmt.Sprintf("res-%d", c.rng.IntN(o.resources))
		}
		c.hold(ctx, cc, res)
		time.Sleep(time.Duration(c.rng.IntN(300)) * time.Millisecond)
	}
	c.log(line{Ev: "done", T: time.Now()})
	return nil
}

// post sends body to path on the replicas in turn until one answers.
func (c *client) post(ctx context.Context, path string, body map[string]any) (map[string]any, error) {
	b, _ := json.Marshal(body)
	var lastErr error
	for i := range c.o.urls {
		u := c.o.urls[(c.next+i)%len(c.o.urls)]
		req, _ := http.NewRequestWithContext(ctx, "POST", u+path+c.o.store, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		sent := time.Now()
		resp, err := c.hc.Do(req)
		if err != nil {
			c.log(line{Ev: "replica_failed", T: sent, Done: time.Now(), Reason: err.Error()})
			lastErr = err
			continue
		}
		var m map[string]any
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			lastErr = fmt.Errorf("%s: HTTP %d %v", path, resp.StatusCode, m)
			continue
		}
		c.next = (c.next + 1) % len(c.o.urls)
		return m, nil
	}
	return nil, lastErr
}

// hold is one round: lock, write under the term while believing, unlock.
func (c *client) hold(ctx context.Context, cc *container.Client, res string) {
	expiry := time.Duration(c.o.expiry) * time.Second
	sent := time.Now()
	m, err := c.post(ctx, "/v1.0-alpha1/lock/", map[string]any{"resourceId": res, "lockOwner": c.o.owner, "expiryInSeconds": c.o.expiry, "waitSeconds": c.o.wait})
	if err != nil {
		c.log(line{Ev: "lock_error", Resource: res, T: sent, Done: time.Now(), Reason: err.Error()})
		return
	}
	if m["success"] != true {
		c.log(line{Ev: "denied", Resource: res, T: sent, Done: time.Now()})
		return
	}
	term := int64(m["term"].(float64))
	h := &holding{c: c, res: res, term: term, validUntil: sent.Add(expiry - c.o.margin), lastRenew: sent}
	c.log(line{Ev: "got", Resource: res, Term: term, T: sent, Done: time.Now(), ValidUntil: h.validUntil})
	h.work(ctx, cc)
	if h.lost {
		return
	}
	us := time.Now()
	m, err = c.post(ctx, "/v1.0-alpha1/unlock/", map[string]any{"resourceId": res, "lockOwner": c.o.owner, "term": term})
	st := -1
	if err == nil {
		st = int(m["status"].(float64))
	}
	c.log(line{Ev: "unlocked", Resource: res, Term: term, T: us, Status: st})
}

type holding struct {
	c          *client
	res        string
	term       int64
	validUntil time.Time
	lastRenew  time.Time
	lost       bool
}

func (h *holding) loseAt(t time.Time, why string) {
	h.lost = true
	h.c.log(line{Ev: "lost", Resource: h.res, Term: h.term, T: t, Reason: why})
}

// work appends to the resource's ledger while the holding is believed,
// renewing with the term every renew-every.
func (h *holding) work(ctx context.Context, cc *container.Client) {
	c := h.c
	name, _ := mutex.BlobName("ledgers", h.res)
	octx, cancel := context.WithDeadline(ctx, h.validUntil)
	w, err := ledger.Open(octx, cc, name, h.term, c.o.owner, ledger.Options{})
	cancel()
	if err != nil {
		h.loseAt(time.Now(), "ledger open: "+err.Error())
		return
	}
	for i := 0; i < c.o.writes; i++ {
		now := time.Now()
		if !now.Before(h.validUntil) {
			h.loseAt(now, "deadline")
			return
		}
		if now.Sub(h.lastRenew) >= c.o.renewEvery && !h.renew(ctx) {
			return
		}
		sent := time.Now()
		actx, cancel := context.WithDeadline(ctx, h.validUntil)
		e, err := w.Append(actx)
		cancel()
		switch {
		case errors.Is(err, ledger.ErrFenced):
			h.loseAt(time.Now(), "fenced")
			return
		case err != nil:
			c.log(line{Ev: "write_failed", Resource: h.res, Term: h.term, T: sent, Reason: err.Error()})
		default:
			c.log(line{Ev: "wrote", Resource: h.res, Term: h.term, Seq: e.Seq, T: sent, Done: time.Now()})
		}
		time.Sleep(c.o.writeEvery)
	}
}

// renew extends the holding from the renew's send, or ends it.
func (h *holding) renew(ctx context.Context) bool {
	c := h.c
	sent := time.Now()
	m, err := c.post(ctx, "/v1.0-alpha1/renew/", map[string]any{"resourceId": h.res, "lockOwner": c.o.owner, "term": h.term})
	if err != nil {
		return true // unknown: the deadline decides
	}
	if st := int(m["status"].(float64)); st != 0 {
		h.loseAt(time.Now(), fmt.Sprintf("renew status %d", st))
		return false
	}
	h.lastRenew = sent
	h.validUntil = sent.Add(time.Duration(c.o.expiry)*time.Second - c.o.margin)
	c.log(line{Ev: "renewed", Resource: h.res, Term: h.term, T: sent, Done: time.Now(), ValidUntil: h.validUntil})
	return true
}
