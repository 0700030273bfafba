package lockapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// maxBody bounds a request body: an id of MaxResourceIDLength escaped as
// JSON fits many times over.
const maxBody = 64 << 10

// request is a lock, unlock or renew body. Field names are read as Dapr's
// protojson reads them (lowerCamelCase or the proto's snake_case); unknown
// fields are ignored; integers may be JSON numbers or strings.
type request struct {
	ResourceID string
	LockOwner  string
	Expiry     int64 // expiryInSeconds
	Wait       int64 // waitSeconds (added)
	Term       int64 // term (added): act only on the holding of this term
}

// decode reads r's body into a request. An empty body is an empty request,
// as in Dapr.
func decode(r *http.Request) (request, *apiError) {
	var q request
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return q, &apiError{http.StatusBadRequest, "ERR_BODY_READ", "failed to read request body: " + err.Error()}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return q, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return q, malformed("failed deserializing HTTP body: %v", err)
	}
	for _, f := range []struct {
		names []string
		str   *string
		num   *int64
		bits  int
	}{
		{[]string{"resourceId", "resource_id"}, &q.ResourceID, nil, 0},
		{[]string{"lockOwner", "lock_owner"}, &q.LockOwner, nil, 0},
		{[]string{"expiryInSeconds", "expiry_in_seconds"}, nil, &q.Expiry, 32},
		{[]string{"waitSeconds"}, nil, &q.Wait, 32},
		{[]string{"term"}, nil, &q.Term, 64},
	} {
		for _, name := range f.names {
			raw, ok := fields[name]
			if !ok || string(raw) == "null" {
				continue
			}
			var err error
			if f.str != nil {
				err = json.Unmarshal(raw, f.str)
			} else {
				*f.num, err = integer(raw, f.bits)
			}
			if err != nil {
				return q, malformed("failed deserializing HTTP body: field %s: %v", name, err)
			}
		}
	}
	return q, nil
}

// integer reads a JSON number or a string holding one, as protojson reads an
// int32 or int64: whole, within range.
func integer(raw json.RawMessage, bits int) (int64, error) {
	s := string(raw)
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, fmt.Errorf("invalid value %s for int%d", raw, bits)
		}
		if n, err = strconv.ParseInt(strconv.FormatInt(int64(f), 10), 10, bits); err != nil {
			return 0, errors.New("out of range for int" + strconv.Itoa(bits))
		}
	}
	return n, nil
}
