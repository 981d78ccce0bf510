package testenv

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
)

// rewriteInstances replaces, in a DescribeInstances response, the
// instanceState and stateReason of every marked instance. It splices bytes at
// the offsets the XML decoder reports rather than re-encoding, so everything
// else reaches the SDK exactly as moto wrote it.
func rewriteInstances(body []byte, marks map[string]instanceMark) ([]byte, error) {
	type edit struct {
		start, end int64
		text       string
	}
	type instance struct {
		depth        int
		id           string
		state        [2]int64
		reason       [2]int64
		hasState     bool
		hasReason    bool
		closeTagFrom int64
	}
	var (
		edits []edit
		stack []string
		cur   *instance
		field string // direct child of the instance item being read
		from  int64  // where that child started
	)
	dec := xml.NewDecoder(bytes.NewReader(body))
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("rewrite DescribeInstances: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name.Local)
			depth := len(stack)
			switch {
			case cur == nil && t.Name.Local == "item" && depth >= 2 && stack[depth-2] == "instancesSet":
				cur = &instance{depth: depth}
			case cur != nil && depth == cur.depth+1:
				field, from = t.Name.Local, off
			}
		case xml.CharData:
			if cur != nil && field == "instanceId" && len(stack) == cur.depth+1 {
				cur.id += string(t)
			}
		case xml.EndElement:
			depth := len(stack)
			stack = stack[:depth-1]
			if cur == nil {
				continue
			}
			switch {
			case depth == cur.depth+1:
				span := [2]int64{from, dec.InputOffset()}
				switch field {
				case "instanceState":
					cur.state, cur.hasState = span, true
				case "stateReason":
					cur.reason, cur.hasReason = span, true
				}
				field = ""
			case depth == cur.depth:
				cur.closeTagFrom = off
				if m, ok := marks[cur.id]; ok {
					state := fmt.Sprintf("<instanceState><code>%d</code><name>%s</name></instanceState>", m.stateCode, xmlEscape(m.state))
					reason := fmt.Sprintf("<stateReason><code>%s</code><message>%s</message></stateReason>", xmlEscape(m.reasonCode), xmlEscape(m.reasonMsg))
					if cur.hasState {
						edits = append(edits, edit{cur.state[0], cur.state[1], state})
					} else {
						edits = append(edits, edit{cur.closeTagFrom, cur.closeTagFrom, state})
					}
					if cur.hasReason {
						edits = append(edits, edit{cur.reason[0], cur.reason[1], reason})
					} else {
						edits = append(edits, edit{cur.closeTagFrom, cur.closeTagFrom, reason})
					}
				}
				cur = nil
			}
		}
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := append([]byte(nil), body...)
	for _, e := range edits {
		out = append(out[:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out, nil
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
