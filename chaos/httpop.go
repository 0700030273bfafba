package chaos

import (
	"fmt"
	"net/http"
	"strings"
)

// Op is a storage operation as the HTTP-aware faults select it. Lease
// operations are PUT ?comp=lease with the x-ms-lease-action header naming the
// action; a metadata write is PUT ?comp=metadata (the elector's term stamp);
// an append is PUT ?comp=appendblock (the ledger and the blob history sink).
type Op string

// The operations a fault can select.
const (
	OpAcquire  Op = "acquire"
	OpRenew    Op = "renew"
	OpRelease  Op = "release"
	OpBreak    Op = "break"
	OpChange   Op = "change"
	OpMetadata Op = "metadata" // metadata write (Set Blob Metadata), not a read
	OpAppend   Op = "append"
	OpOther    Op = "other" // anything else: reads, creates, lists
	OpAny      Op = "*"     // selects every request
)

// selectable are the values a fault's Op may take.
var selectable = []Op{OpAcquire, OpRenew, OpRelease, OpBreak, OpChange, OpMetadata, OpAppend, OpOther, OpAny}

// validate reports a fault parameter error for an Op outside selectable.
func (o Op) validate() error {
	for _, s := range selectable {
		if o == s {
			return nil
		}
	}
	names := make([]string, len(selectable))
	for i, s := range selectable {
		names[i] = string(s)
	}
	return fmt.Errorf("%w: op %q (want one of %s)", ErrInvalid, o, strings.Join(names, ", "))
}

// matches reports whether a request of operation got is selected by o.
func (o Op) matches(got Op) bool { return o == OpAny || o == got }

// ClassifyRequest names the storage operation r carries. Query parameter and
// header names are matched case-insensitively, as storage does.
func ClassifyRequest(r *http.Request) Op {
	if r.Method != http.MethodPut {
		return OpOther
	}
	var comp string
	for k, v := range r.URL.Query() {
		if strings.EqualFold(k, "comp") && len(v) > 0 {
			comp = strings.ToLower(v[0])
		}
	}
	switch comp {
	case "lease":
		switch strings.ToLower(r.Header.Get("x-ms-lease-action")) {
		case "acquire":
			return OpAcquire
		case "renew":
			return OpRenew
		case "release":
			return OpRelease
		case "break":
			return OpBreak
		case "change":
			return OpChange
		}
	case "metadata":
		return OpMetadata
	case "appendblock":
		return OpAppend
	}
	return OpOther
}
