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
func runStatus(args []string, stdout, _ io.Writer) error {
	o, err := parseStatusOptions(args, stdout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url+"/status", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status: %s answered %s", o.url, resp.Status)
	}
	_, err = io.Copy(stdout, resp.Body)
	return err
}
