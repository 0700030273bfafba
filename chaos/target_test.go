package chaos

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Every storage fault takes the container and the lock blob it is handed:
// a backend binds them all in one place.
func TestStorageTarget_EachFaultActsOnTheStorageItIsHanded(t *testing.T) {
	c, err := container.NewClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1/leases", nil)
	if err != nil {
		t.Fatal(err)
	}
	const lock = "leader"
	blobURL := c.NewBlobClient(lock).URL()
	onLock := func(b *blob.Client) bool { return b != nil && b.URL() == blobURL }
	for _, st := range []StorageTarget{
		&BreakLease{}, &DeleteBlob{}, &OperatorMetadata{}, &DeleteContainer{}, &Rollback{},
		&DeleteDocument{}, &RollbackDocument{}, &CorruptDocument{}, &LedgerBlobType{},
	} {
		st.SetStorage(c, lock)
		var ok bool
		switch f := st.(type) {
		case *BreakLease:
			ok = onLock(f.Blob)
		case *DeleteBlob:
			ok = onLock(f.Blob)
		case *OperatorMetadata:
			ok = onLock(f.Blob)
		case *Rollback:
			ok = f.Container == c && f.LockBlob == lock
		case *DeleteContainer:
			ok = f.Container == c
		case *DeleteDocument:
			ok = f.Container == c
		case *RollbackDocument:
			ok = f.Container == c
		case *CorruptDocument:
			ok = f.Container == c
		case *LedgerBlobType:
			ok = f.Container == c
		}
		if !ok {
			t.Errorf("%T.SetStorage did not bind it to the container and lock blob it was handed", st)
		}
	}
}

// Every request-level fault acts in the HTTP proxy it is handed.
func TestRequestTarget_EachFaultActsInTheProxyItIsHanded(t *testing.T) {
	p := &HTTPProxy{}
	for _, f := range []RequestTarget{&LateDelivery{}, &LateBreak{}, &LostResponse{}, &Refusal{}, &SlowReads{}} {
		f.SetHTTPProxy(p)
		var got *HTTPProxy
		switch f := f.(type) {
		case *LateDelivery:
			got = f.Proxy
		case *LateBreak:
			got = f.Proxy
		case *LostResponse:
			got = f.Proxy
		case *Refusal:
			got = f.Proxy
		case *SlowReads:
			got = f.Proxy
		}
		if got != p {
			t.Errorf("%T.SetHTTPProxy did not bind it to the proxy it was handed", f)
		}
	}
}
