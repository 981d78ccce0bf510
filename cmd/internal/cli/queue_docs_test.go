package cli

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
)

// queueDocs are the pages that show `sortie jobs queue`'s output.
var queueDocs = []string{
	"../../../README.md",
	"README.md",
	"../../../controller/README.md",
	"../../../provision/aws/README.md",
}

// TestDocumentedQueuesHaveTheQueuesColumns: every table a page shows
// after `$ sortie jobs queue` has a header the queue prints (the optional
// OWNER, TASK and RETRY OF included or not), so that a reader's own queue
// looks as the page says; a header cut short with "..." is checked up to
// the cut.
func TestDocumentedQueuesHaveTheQueuesColumns(t *testing.T) {
	printed := map[string]bool{}
	str := func(s string) *string { return &s }
	orig := int64(1)
	for _, owners := range []bool{false, true} {
		for _, pipeline := range []bool{false, true} {
			for _, retry := range []bool{false, true} {
				a := contract.JobView{ID: 2, Name: "a", Owner: str("alice"), Status: "RUNNING", NumTasks: 1, SubmittedAt: time.Now()}
				b := a
				b.ID = 3
				if owners {
					b.Owner = str("bob")
				}
				if pipeline {
					b.NumTasks = 2
				}
				if retry {
					b.RetryOf = &orig
				}
				for _, waiting := range []bool{false, true} {
					if waiting {
						place := 1
						b.Status, b.WaitReason, b.QueuePlace = "PENDING", str("waiting: the server runs 1 of 1 jobs (server limit); this job is next"), &place
					}
					f, out, _ := testFactory()
					if err := printQueue(f, []contract.JobView{a, b}); err != nil {
						t.Fatal(err)
					}
					header, _, _ := strings.Cut(out.String(), "\n")
					printed[columns(header)] = true
				}
			}
		}
	}
	queue := regexp.MustCompile(`^\$ sortie jobs queue\b`)
	found := 0
	for _, page := range queueDocs {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if !queue.MatchString(l) {
				continue
			}
			// The header is the first line after the command that starts
			// with ID (a note on stderr may come first); the command's
			// output ends at the next command or the block's end.
			for _, next := range lines[i+1:] {
				if strings.HasPrefix(next, "$ ") || strings.HasPrefix(next, "```") {
					break
				}
				if !strings.HasPrefix(next, "ID ") {
					continue
				}
				found++
				got := columns(next)
				if cut, ok := strings.CutSuffix(got, " ..."); ok {
					ok = false
					for p := range printed {
						ok = ok || strings.HasPrefix(p, cut+" ")
					}
					if !ok {
						t.Errorf("%s:%d: the queue's header never starts %q", filepath.Clean(page), i+1, cut)
					}
				} else if !printed[got] {
					t.Errorf("%s:%d: the queue never prints the header %q; it prints one of %q", filepath.Clean(page), i+1, got, slices.Sorted(maps.Keys(printed)))
				}
				break
			}
		}
	}
	if found < 3 {
		t.Errorf("%d documented queues found, want the README's and the CLI README's", found)
	}
}

// columns is a table line's cells, one space apart.
func columns(line string) string {
	return strings.Join(regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1), " ")
}
