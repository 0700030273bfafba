package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runStatus prints a running worker's /status. The container image has no
// shell or HTTP client, and ACI's exec runs one executable without
// arguments, so the image links /status to the binary (argv0.go) and
// `az container exec … --exec-command /status` is how an operator asks a
// worker on Azure who leads.
func runStatus(args []string, stdout io.Writer) error {
	var url string
	fs := newFlagSet("blobleader status", stdout, `blobleader status — print a running worker's /status JSON.

Usage:
  blobleader status [--url http://127.0.0.1:8080]`)
	fs.StringVar(&url, "url", "http://127.0.0.1:8080", "base URL of the worker's HTTP endpoints")
	if err := fs.parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/status", nil)
	if err != nil {
		return fs.explain(usagef("invalid --url %q: %v", url, err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status: %s answered %s", url, resp.Status)
	}
	_, err = io.Copy(stdout, resp.Body)
	return err
}
