package bloblock

import (
	"errors"
	"strings"
	"testing"
)

func TestExpandConnectionString(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantEndpoint string
		wantErr                bool
	}{
		{name: "shortcut", in: "UseDevelopmentStorage=true", wantEndpoint: "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"},
		{name: "shortcut any case, trailing semicolon", in: "usedevelopmentstorage=TRUE;", wantEndpoint: "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"},
		{name: "with proxy", in: "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://azurite.local", wantEndpoint: "BlobEndpoint=http://azurite.local:10000/devstoreaccount1;"},
		{name: "false is not a shortcut", in: "UseDevelopmentStorage=false", wantErr: true},
		{name: "bad proxy", in: "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=::nope", wantErr: true},
		{name: "ordinary string unchanged", in: "AccountName=a;AccountKey=b", wantEndpoint: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandConnectionString(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadConnectionString) {
					t.Fatalf("ExpandConnectionString(%q) error = %v, want ErrBadConnectionString", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantEndpoint == "" {
				if got != tc.in {
					t.Fatalf("changed an ordinary connection string: %q", got)
				}
				return
			}
			if !strings.Contains(got, tc.wantEndpoint) || !strings.Contains(got, "AccountName="+developmentAccount) || !strings.Contains(got, "AccountKey="+developmentAccountKey) {
				t.Fatalf("ExpandConnectionString(%q) = %q, want the development account at %s", tc.in, got, tc.wantEndpoint)
			}
			if err := checkConnectionString(got); err != nil {
				t.Fatalf("expanded string does not pass our own check: %v", err)
			}
		})
	}
}
