package provision

import (
	"fmt"
	"strconv"
	"strings"
)

// PortRange is one entry of resources.ports: From..To, both included.
type PortRange struct{ From, To int }

func (r PortRange) String() string {
	if r.From == r.To {
		return strconv.Itoa(r.From)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// ParsePorts reads resources.ports ("8080" or "10000-10010" each); every
// bad entry is named.
func ParsePorts(ports []string) ([]PortRange, error) {
	var out []PortRange
	var problems []string
	for i, p := range ports {
		r, err := parsePort(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("resources.ports[%d]: %q %v", i, p, err))
			continue
		}
		out = append(out, r)
	}
	if len(problems) > 0 {
		return nil, Prechecks(fmt.Errorf("%s", strings.Join(problems, "\n")))
	}
	return out, nil
}

func parsePort(p string) (PortRange, error) {
	from, to, isRange := strings.Cut(strings.TrimSpace(p), "-")
	a, err := port(from)
	if err != nil {
		return PortRange{}, err
	}
	b := a
	if isRange {
		if b, err = port(to); err != nil {
			return PortRange{}, err
		}
		if b < a {
			return PortRange{}, fmt.Errorf("is a range that ends before it starts; write it low-high, e.g. \"%d-%d\"", b, a)
		}
	}
	return PortRange{a, b}, nil
}

func port(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("is not a port (1-65535) or a range of ports such as \"10000-10010\"")
	}
	return n, nil
}
