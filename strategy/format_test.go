package strategy

import "testing"

func TestFormatExitCodes(t *testing.T) {
	zero, one, n29 := 0, 1, 29
	for _, tc := range []struct {
		codes []*int
		want  string
	}{
		{nil, "-"},
		{[]*int{}, "-"},
		{[]*int{&zero}, "0"},
		{[]*int{&n29}, "29"},
		{[]*int{nil}, "?"},
		{[]*int{&one, nil, &zero}, "1,?,0"},
	} {
		if got := FormatExitCodes(tc.codes); got != tc.want {
			t.Errorf("FormatExitCodes(%v) = %q, want %q", tc.codes, got, tc.want)
		}
	}
}
