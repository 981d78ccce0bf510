package web

import (
	"fmt"
	"net/http"
	"testing"

	"sortie/controller/contract"
	"sortie/controller/store"
)

// The store's errors are answered as the store's, though this package
// does not import it.
func TestDetailStoreErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("job 9: %w", store.ErrNotFound), http.StatusNotFound, contract.CodeNotFound},
		{fmt.Errorf("write: %w: held for 15s", store.ErrBusy), http.StatusServiceUnavailable, contract.CodeBusy},
		{fmt.Errorf("job 9: %w", contract.ErrNoSuchJob), http.StatusNotFound, contract.CodeNotFound},
		{fmt.Errorf("disk full"), http.StatusInternalServerError, contract.CodeInternal},
	} {
		status, d := Detail(tc.err)
		if status != tc.status || d.Code != tc.code || d.Message != tc.err.Error() {
			t.Errorf("Detail(%v) = %d %+v; want %d %s", tc.err, status, d, tc.status, tc.code)
		}
	}
}
