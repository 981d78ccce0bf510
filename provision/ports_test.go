package provision

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePorts(t *testing.T) {
	got, err := ParsePorts([]string{"8080", "10000-10010", " 22 ", "443-443"})
	if err != nil {
		t.Fatal(err)
	}
	want := []PortRange{{8080, 8080}, {10000, 10010}, {22, 22}, {443, 443}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePorts (-want +got):\n%s", diff)
	}
	if got[1].String() != "10000-10010" || got[0].String() != "8080" {
		t.Errorf("String = %s, %s", got[1], got[0])
	}
	_, err = ParsePorts([]string{"80", "http", "0", "9-3", "70000", "1-"})
	if Classify(err) != ClassPrechecks {
		t.Fatalf("bad ports: %v, want a prechecks error", err)
	}
	for _, w := range []string{`resources.ports[1]: "http"`, `resources.ports[2]: "0"`, `resources.ports[3]: "9-3"`, `"3-9"`,
		`resources.ports[4]: "70000"`, `resources.ports[5]: "1-"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "ports[0]") {
		t.Errorf("error %q names a good entry", err)
	}
}
