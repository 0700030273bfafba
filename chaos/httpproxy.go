package chaos

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// HTTPProxy is an HTTP-aware proxy between one worker and storage. toxiproxy
// sees bytes; this proxy sees requests, so it can act on one storage
// operation (see Op): hold a renew or a release in flight past the client's
// timeout and deliver it later (LateDelivery), or deliver an acquire and drop
// its answer (LostResponse). With no fault on it, it forwards every request
// unchanged.
//
// In the local cluster it sits behind the worker's toxiproxy Proxy:
//
//	worker → Proxy (toxiproxy: latency, resets, partition) → HTTPProxy → storage
//
// so the byte-level and the request-level faults compose, and a partition
// (Proxy disabled) also cuts the requests this proxy would hold.
type HTTPProxy struct {
	name     string
	upstream string
	ln       net.Listener
	srv      *http.Server
	pooled   *http.Transport // the pass-through path, like the worker's own pool
	fresh    *http.Transport // held requests: a new connection each, as a late packet would open

	ctx    context.Context // ends at Close: held deliveries give up
	cancel context.CancelFunc

	mu    sync.Mutex
	hooks []hook

	requests *RequestLog // every request's arrival, forwarding and answer
	granted  *RequestLog // the renews storage answered 2xx, kept far longer
}

// hook is what an HTTP fault puts on the proxy.
type hook interface {
	// hold is asked for every request in arrival order: ok takes the request
	// over, to be sent to storage after delay; done then gets the outcome.
	hold(op Op) (delay time.Duration, done func(Delivery), ok bool)
	// drop is asked with storage's answer to a request that was not held:
	// true drops the answer (the client's connection is reset instead).
	drop(op Op, status int) bool
}

// answerHook is a hook that can answer a request itself, in storage's
// place, without forwarding it (Refusal).
type answerHook interface {
	answer(op Op) (a errorAnswer, ok bool)
}

// errorAnswer is an error answer as storage words one: a status, the
// x-ms-error-code header and an XML body with Code and Message.
type errorAnswer struct {
	Status        int
	Code, Message string
}

func (a errorAnswer) write(w http.ResponseWriter) {
	var body bytes.Buffer
	body.WriteString(`<?xml version="1.0" encoding="utf-8"?><Error><Code>`)
	_ = xml.EscapeText(&body, []byte(a.Code))
	body.WriteString(`</Code><Message>`)
	_ = xml.EscapeText(&body, []byte(a.Message))
	body.WriteString(`</Message></Error>`)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-ms-error-code", a.Code)
	w.WriteHeader(a.Status)
	_, _ = w.Write(body.Bytes())
}

// pathHook is a hook that also selects requests by the blob path they name
// (SlowReads: one kind of blob, not one operation).
type pathHook interface {
	holdPath(op Op, path string) (delay time.Duration, done func(Delivery), ok bool)
}

// Delivery is what became of one held request.
type Delivery struct {
	Op     Op        `json:"op"`
	Held   time.Time `json:"held"`             // when the proxy took it over
	Sent   time.Time `json:"sent,omitzero"`    // when it went to storage; zero if it never did
	Status int       `json:"status,omitzero"`  // storage's HTTP status; 0 when none came back
	Code   string    `json:"code,omitzero"`    // storage's x-ms-error-code, if any
	Err    string    `json:"err,omitzero"`     // why no status came back
	Client bool      `json:"client,omitempty"` // the client was still waiting and got the answer
}

// upstreamIdleTimeout is how long a pooled connection to storage may sit
// idle before the proxy closes it. Azurite (Node's http server) closes one
// after 5 s idle; a request written as it does is reset, a failure nobody
// injected. Closing ours first, with seconds to spare for a loaded machine,
// leaves no such moment.
const upstreamIdleTimeout = 2 * time.Second

// maxBody bounds the request body the proxy buffers (ledger and history
// appends are a few KiB; a block is at most 100 MiB on Azure).
const maxBody = 64 << 20

// NewHTTPProxy starts an HTTP proxy on a free 127.0.0.1 port that forwards to
// upstream (host:port, plain HTTP: Azurite).
func NewHTTPProxy(name, upstream string) (*HTTPProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: start http proxy %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &HTTPProxy{
		name: name, upstream: upstream, ln: ln, ctx: ctx, cancel: cancel,
		pooled: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: upstreamIdleTimeout, DisableCompression: true},
		fresh:  &http.Transport{DisableKeepAlives: true, DisableCompression: true},

		requests: NewRequestLog(DefaultRequestLogSize),
		granted:  NewRequestLog(GrantedRenewsKept),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Name is the proxy's name (the worker it serves).
func (p *HTTPProxy) Name() string { return p.name }

// Addr is the host:port the proxy listens on.
func (p *HTTPProxy) Addr() string { return p.ln.Addr().String() }

// Upstream is the host:port the proxy forwards to.
func (p *HTTPProxy) Upstream() string { return p.upstream }

// Close stops the proxy: open connections are closed and held requests are
// never delivered.
func (p *HTTPProxy) Close() {
	p.cancel()
	_ = p.srv.Close()
	p.pooled.CloseIdleConnections()
}

// Requests is the proxy's record of the latest requests it served
// (DefaultRequestLogSize of them), for a failed run's evidence.
func (p *HTTPProxy) Requests() *RequestLog { return p.requests }

// GrantedRenewsKept is how many granted renews each proxy keeps: over nine
// hours of a leader renewing every 2 s, so a checker judging a whole soak
// at its end still finds the renew a killed leader never logged.
const GrantedRenewsKept = 16384

// GrantedRenews is the record of every renew storage answered with a 2xx
// (the latest GrantedRenewsKept): when a leader's lease could last until,
// whatever it managed to log before it died.
func (p *HTTPProxy) GrantedRenews() *RequestLog { return p.granted }

// record keeps r in the request log, and a granted renew also in the
// renews' record — also one whose answer a fault dropped or that a fault
// delivered after the client gave up: storage extended the lease all the
// same.
func (p *HTTPProxy) record(r RequestRecord) {
	p.requests.Add(r)
	if r.Op == OpRenew && r.Status >= 200 && r.Status < 300 {
		p.granted.Add(r)
	}
}

func (p *HTTPProxy) install(h hook) error {
	if p.ctx.Err() != nil {
		return fmt.Errorf("chaos: http proxy %s is closed", p.name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hooks = append(p.hooks, h)
	return nil
}

func (p *HTTPProxy) uninstall(h hook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.hooks {
		if x == h {
			p.hooks = append(p.hooks[:i:i], p.hooks[i+1:]...)
			return
		}
	}
}

func (p *HTTPProxy) snapshot() []hook {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]hook(nil), p.hooks...)
}

// ServeHTTP forwards one request, letting the faults on the proxy hold it or
// drop its answer.
func (p *HTTPProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := RequestRecord{Proxy: p.name, Op: ClassifyRequest(r), Path: r.URL.Path, Arrived: time.Now()}
	held := false
	// Recorded however the request ends (an abort panics through here);
	// a held request is recorded when its delivery ends.
	defer func() {
		if !held {
			p.record(rec)
		}
	}()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		rec.Err = "read request: " + err.Error()
		panic(http.ErrAbortHandler) // the client broke off (or sent too much): nothing to forward
	}
	op := rec.Op
	hooks := p.snapshot()
	for _, h := range hooks {
		if ah, ok := h.(answerHook); ok {
			if a, ok := ah.answer(op); ok {
				rec.Answered, rec.Status = time.Now(), a.Status
				a.write(w)
				return
			}
		}
	}
	for _, h := range hooks {
		delay, done, ok := h.hold(op)
		if ph, isPath := h.(pathHook); isPath && !ok {
			delay, done, ok = ph.holdPath(op, r.URL.Path)
		}
		if ok {
			held = true
			arrived := rec.Arrived
			p.serveHeld(w, r, body, op, delay, func(d Delivery) {
				p.record(RequestRecord{Proxy: p.name, Op: op, Path: r.URL.Path, Arrived: arrived, Forwarded: d.Sent,
					Answered: time.Now(), Status: d.Status, Err: d.Err, Held: true})
				done(d)
			})
			return
		}
	}
	rec.Forwarded = time.Now()
	ctx := httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		rec.Reused, rec.IdleFor = ci.Reused, ci.IdleTime
	}})
	resp, respBody, err := p.roundTrip(ctx, p.pooled, r, body)
	rec.Answered = time.Now()
	if err != nil {
		// Storage unreachable or the client gone: cut the connection rather
		// than invent an HTTP answer storage never gave.
		rec.Err = err.Error()
		panic(http.ErrAbortHandler)
	}
	rec.Status = resp.StatusCode
	for _, h := range hooks {
		if h.drop(op, resp.StatusCode) {
			rec.Dropped = true
			reset(w)
			return
		}
	}
	writeResponse(w, resp, respBody)
}

// serveHeld takes a request over: it is sent to storage after delay on a
// connection of its own, whether or not the client still waits. If the
// client is still there when the answer comes, it gets it.
func (p *HTTPProxy) serveHeld(w http.ResponseWriter, r *http.Request, body []byte, op Op, delay time.Duration, done func(Delivery)) {
	req := r.Clone(context.WithoutCancel(r.Context()))
	d := Delivery{Op: op, Held: time.Now()}
	type answer struct {
		resp *http.Response
		body []byte
	}
	answered := make(chan answer, 1)
	go func() {
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-p.ctx.Done():
			d.Err = "proxy closed before delivery"
			done(d)
			close(answered)
			return
		}
		d.Sent = time.Now()
		resp, respBody, err := p.roundTrip(p.ctx, p.fresh, req, body)
		if err != nil {
			d.Err = err.Error()
			done(d)
			close(answered)
			return
		}
		d.Status, d.Code = resp.StatusCode, resp.Header.Get("x-ms-error-code")
		select {
		case <-r.Context().Done():
		default:
			d.Client = true
		}
		done(d)
		answered <- answer{resp, respBody}
	}()
	select {
	case a, ok := <-answered:
		if !ok {
			panic(http.ErrAbortHandler)
		}
		writeResponse(w, a.resp, a.body)
	case <-r.Context().Done():
		// The client timed out and closed its connection; the request is
		// still on its way to storage.
	}
}

// roundTrip sends a copy of r with body to storage and reads the whole answer.
func (p *HTTPProxy) roundTrip(ctx context.Context, tr *http.Transport, r *http.Request, body []byte) (*http.Response, []byte, error) {
	out, err := http.NewRequestWithContext(ctx, r.Method, "http://"+p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range r.Header {
		if !hopByHop[http.CanonicalHeaderKey(k)] {
			out.Header[k] = append([]string(nil), vs...)
		}
	}
	out.ContentLength = int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	resp, err := tr.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, respBody, nil
}

var hopByHop = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

func writeResponse(w http.ResponseWriter, resp *http.Response, body []byte) {
	for k, vs := range resp.Header {
		if !hopByHop[http.CanonicalHeaderKey(k)] {
			w.Header()[k] = append([]string(nil), vs...)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// reset closes the client's connection with an RST (SO_LINGER 0): the
// request took effect at storage, and the client learns nothing of it.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// errNoProxy is returned by the HTTP faults without a proxy.
var errNoProxy = errors.New("needs an http proxy")
