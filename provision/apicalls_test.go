package provision

import (
	"context"
	"errors"
	"testing"
)

func TestAPICallsTravelInTheContext(t *testing.T) {
	if APICallsFrom(context.Background()) != nil {
		t.Fatal("a bare context carries an API call counter")
	}
	var got []string
	ctx := WithAPICalls(context.Background(), func(call string, err error) { got = append(got, call+" "+errString(err)) })
	APICallsFrom(ctx)("RunInstances", errors.New("boom"))
	if len(got) != 1 || got[0] != "RunInstances boom" {
		t.Errorf("counter told %q, want [RunInstances boom]", got)
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
