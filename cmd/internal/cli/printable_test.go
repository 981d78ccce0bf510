package cli

import (
	"bytes"
	"context"
	"errors"
	"sortie/controller/contract"
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"train":              "train",
		"héllo ✓ 日本":         "héllo ✓ 日本",
		"\x1b[31mred\x1b[0m": `\x1b[31mred\x1b[0m`,
		"a\nb\tc\rd":         `a\nb\tc\rd`,
		"bell\a del\x7f":     `bell\x07 del\x7f`,
		"c1\u009b2J":         `c1\u009b2J`,
		"evil\u202etxt.exe":  `evil\u202etxt.exe`,
		"bad\xffutf8":        `bad\xffutf8`,
		"line\u2028sep":      `line\u2028sep`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q; want %q", in, got, want)
		}
	}
	if got := printableLines("one\ntwo\x1b[2J"); got != "one\ntwo\\x1b[2J" {
		t.Errorf("printableLines kept or lost the wrong things: %q", got)
	}
}

// hostileName is a job name that, printed raw, clears the screen, fakes a
// line of the table and hides what follows.
const hostileName = "evil\x1b[2J\nID  NAME\t\u202e"

// TestTablesAndMessagesEscapeControlCharacters: a task name with ANSI
// escapes or newlines was printed raw into jobs queue and jobs show.
func TestTablesAndMessagesEscapeControlCharacters(t *testing.T) {
	reason := "stopped\x1b]0;title\x07"
	jobs := []contract.JobView{{ID: 9, Name: hostileName, Status: "FAILED", FailureReason: &reason,
		Overrides: []contract.Override{{Path: "name", Old: "a\x1b", New: "b\n"}}}}
	for _, argv := range [][]string{{"jobs", "queue"}, {"jobs", "show", "9"}, {"jobs", "retry", "--dry-run", "--reason", "x", "9"}} {
		f, out, errb := testFactory()
		f.Service = func(context.Context) (Service, error) {
			return &detailService{fakeService: fakeService{jobs: jobs},
				detail: &contract.JobDetail{JobView: jobs[0], Chain: []contract.JobView{jobs[0], jobs[0]}}}, nil
		}
		Execute(f, argv)
		text := out.String() + errb.String()
		for _, raw := range []string{"\x1b", "\x07", "\u202e", "\nID  NAME", "\t"} {
			if strings.Contains(text, raw) {
				t.Errorf("%v printed %q raw:\n%s", argv, raw, text)
			}
		}
		if !strings.Contains(text, `evil\x1b[2J\nID  NAME\t\u202e`) {
			t.Errorf("%v does not show the name escaped:\n%s", argv, text)
		}
	}
	var out bytes.Buffer
	if err := printJSONList(&out, jobs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"evil\u001b[2J\nID  NAME\t`+"\u202e\"") {
		t.Errorf("-o json changed the name: %s", out.String())
	}
	var errb bytes.Buffer
	f2, _, _ := testFactory()
	f2.Err = &errb
	f2.Service = func(context.Context) (Service, error) { return nil, errors.New("no job named " + hostileName) }
	Execute(f2, []string{"jobs", "queue"})
	if strings.Contains(errb.String(), "\x1b") || !strings.Contains(errb.String(), `evil\x1b[2J`) {
		t.Errorf("error message not escaped: %q", errb.String())
	}
}

type detailService struct {
	fakeService
	detail *contract.JobDetail
}

func (s *detailService) Show(context.Context, int64) (*contract.JobDetail, error) {
	return s.detail, nil
}
func (s *detailService) RetryTargets(context.Context, contract.RetryRequest) ([]contract.JobView, error) {
	return s.jobs, nil
}
