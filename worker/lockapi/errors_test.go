package lockapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/blobleader/blobleader/worker/election/bloblock"
)

func TestPublic_NeverCarriesTheRequestURL(t *testing.T) {
	leak := &url.Error{Op: "Put", URL: "https://acct.blob.core.windows.net/c/b?comp=lease&sig=SECRET", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no answer", &bloblock.Error{Op: "acquire", Err: leak}, "acquire: no answer from storage"},
		{"timeout", &bloblock.Error{Op: "renew", Err: fmt.Errorf("%w: %v", context.DeadlineExceeded, leak)}, "renew: request timed out"},
		{"status", &bloblock.Error{Op: "release", Status: 503, Code: "ServerBusy", Err: leak}, "release: 503 ServerBusy"},
		{"not storage", leak, "storage request failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := public(tc.err)
			if got != tc.want || strings.Contains(got, "SECRET") || strings.Contains(got, "http") {
				t.Fatalf("public = %q, want %q and no URL", got, tc.want)
			}
		})
	}
}
