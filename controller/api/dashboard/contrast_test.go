package dashboard

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"
)

// The style sheet's text colours meet WCAG AA against the backgrounds
// they are drawn on: a contrast of 4.5:1 at least.
func TestContrastIsAA(t *testing.T) {
	css, err := staticFS.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z-]+):\s*(#[0-9a-f]{6})`).FindAllStringSubmatch(string(css), -1) {
		vars[m[1]] = m[2]
	}
	pairs := [][2]string{
		{"fg", "bg"}, {"fg", "panel"}, {"muted", "bg"}, {"muted", "panel"}, {"link", "bg"}, {"link", "panel"},
		{"danger", "bg"}, {"ok-fg", "ok-bg"}, {"bad-fg", "bad-bg"}, {"run-fg", "run-bg"}, {"warn-fg", "warn-bg"},
		{"wait-fg", "wait-bg"}, {"off-fg", "off-bg"},
	}
	for _, p := range pairs {
		fg, bg := vars[p[0]], vars[p[1]]
		if fg == "" || bg == "" {
			t.Errorf("--%s or --%s is not a colour of style.css", p[0], p[1])
			continue
		}
		if r := contrast(t, fg, bg); r < 4.5 {
			t.Errorf("--%s %s on --%s %s: contrast %.2f, under AA's 4.5", p[0], fg, p[1], bg, r)
		}
	}
	// White text on the danger buttons and the tooltips.
	for _, bg := range []string{"danger", "fg"} {
		if r := contrast(t, "#ffffff", vars[bg]); r < 4.5 {
			t.Errorf("white on --%s: contrast %.2f", bg, r)
		}
	}
	if r := contrast(t, "#777777", "#ffffff"); r >= 4.5 {
		t.Errorf("the check passes #777 on white (%.2f), which fails AA", r)
	}
}

// contrast is WCAG 2's contrast ratio of two #rrggbb colours.
func contrast(t *testing.T, a, b string) float64 {
	la, lb := luminance(t, a), luminance(t, b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(t *testing.T, hex string) float64 {
	var c [3]float64
	for i := range c {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			t.Fatal(fmt.Errorf("colour %q: %w", hex, err))
		}
		s := float64(v) / 255
		if s <= 0.03928 {
			c[i] = s / 12.92
		} else {
			c[i] = math.Pow((s+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}
