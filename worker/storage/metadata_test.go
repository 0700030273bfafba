package storage_test

import (
	"strings"
	"testing"

	"github.com/blobleader/blobleader/worker/storage"
)

func TestTerm(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tt := range []struct {
		name    string
		md      map[string]*string
		want    int64
		wantErr string // "" for none
	}{
		{name: "no metadata", md: nil, want: 0},
		{name: "no term", md: map[string]*string{"holder": s("w1")}, want: 0},
		{name: "a term", md: map[string]*string{"term": s("42")}, want: 42},
		{name: "a name the SDK capitalised", md: map[string]*string{"Term": s("7")}, want: 7},
		{name: "a typo", md: map[string]*string{"term": s("1795400000000x")}, wantErr: `metadata term "1795400000000x" is not a non-negative integer`},
		{name: "negative", md: map[string]*string{"TERM": s("-5")}, wantErr: `metadata term "-5" is not a non-negative integer`},
		{name: "empty", md: map[string]*string{"term": s("")}, wantErr: `metadata term "" is not a non-negative integer`},
		{name: "past int64", md: map[string]*string{"term": s("9223372036854775808")}, wantErr: "not a non-negative integer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := storage.Term(tt.md)
			switch {
			case tt.wantErr == "" && (err != nil || got != tt.want):
				t.Fatalf("Term = %d, %v; want %d, nil", got, err, tt.want)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != 0):
				t.Fatalf("Term = %d, %v; want 0 and an error saying %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestMetadataValue_MatchesNamesInAnyCase(t *testing.T) {
	v := "w1"
	md := map[string]*string{"Holder": &v}
	if got := storage.MetadataValue(md, "holder"); got != "w1" {
		t.Fatalf("MetadataValue(holder) = %q, want w1", got)
	}
	if got := storage.MetadataValue(md, "term"); got != "" {
		t.Fatalf("MetadataValue(term) = %q, want empty", got)
	}
}
