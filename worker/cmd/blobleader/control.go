package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// The control endpoint (--control-listen, off by default). It exists so that
// a graceful stop can be asked for by something that is not the process's
// parent: on Azure Container Instances no ARM operation is documented to
// SIGTERM a container (a restart is not documented to, and `az container
// stop` is reported to SIGKILL), so the Azure test suite's chaos sidecar,
// inside the same container group, POSTs here. The worker then sends itself
// SIGTERM, so a control stop takes exactly the path an orchestrator's stop
// takes: step down, release the lease, log `released`, exit 0.
//
// Contract (docs/architecture.md): POST /stop → 202 Accepted, then SIGTERM to
// this process; any other method on /stop → 405; any other path → 404. The
// address must be a loopback IP and port (options.go): nothing outside the
// host (or the ACI group, whose containers share one network namespace) can
// reach it.

// listenControl opens the --control-listen address (nil: off), at start-up
// with the other listeners, so a taken port fails before we contend.
func listenControl(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("cannot listen on %s %s: %v", flagRef("control-listen"), addr, causeOf(err))
	}
	return ln, nil
}

// serveControl serves the control endpoint on ln (nil: off) until the
// returned function is called. Call it only after SIGTERM is being handled
// (signal.NotifyContext): a stop sends SIGTERM to this process.
func serveControl(ln net.Listener, log *slog.Logger) (stop func()) {
	if ln == nil {
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stop", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST /stop stops the worker", http.StatusMethodNotAllowed)
			return
		}
		log.Info("graceful stop asked for on the control endpoint; sending SIGTERM to self", "from", r.RemoteAddr)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintln(w, "stopping")
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			log.Error("cannot send SIGTERM to self", "err", err)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	log.Info("control endpoint listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
