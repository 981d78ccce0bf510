package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
)

// The headers of every POST.
const (
	// HeaderEvent is the event kind: status, recovery, failed, succeeded.
	HeaderEvent = "X-Sortie-Event"
	// HeaderDelivery is the delivery's idempotency key: the same on every
	// try of one delivery, so a receiver can drop one it has seen.
	HeaderDelivery = "X-Sortie-Delivery"
	// HeaderTimestamp is when the try was sent, in Unix seconds.
	HeaderTimestamp = "X-Sortie-Timestamp"
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, keyed with the
	// webhook's secret, of the timestamp, a dot and the body.
	HeaderSignature = "X-Sortie-Signature"
)

// Payload is the JSON body of each POST. Every field is always present;
// absent values are null.
type Payload struct {
	// Delivery is the idempotency key, as in HeaderDelivery.
	Delivery string `json:"delivery"`
	// Event is the kind the webhook asked for.
	Event string `json:"event"`
	JobID int64  `json:"job_id"`
	Job   string `json:"job_name"`
	// Task is the task's position in the pipeline (0-based).
	Task     int     `json:"task"`
	TaskName *string `json:"task_name"`
	// Attempt is the task's newest attempt at the change (1-based).
	Attempt        *int             `json:"attempt"`
	Status         lifecycle.Status `json:"status"`
	PreviousStatus lifecycle.Status `json:"previous_status"`
	Reason         *string          `json:"reason"`
	// ExitCodes are the last ended attempt's, per node in rank order.
	ExitCodes []*int    `json:"exit_codes"`
	At        time.Time `json:"at"`
	// Show is the command that shows the job.
	Show string `json:"show"`
	// Text is the event in one line, for Slack's incoming webhooks and
	// chat tools that print a "text" field.
	Text string `json:"text"`
}

// DeliveryKey is d's idempotency key: the same on every try of d.
func DeliveryKey(d *store.Delivery) string { return d.Key() }

// Body is the JSON posted for d; the same on every try of d.
func Body(d *store.Delivery, jobName, taskName string) ([]byte, error) {
	e := d.Event
	p := Payload{
		Delivery: DeliveryKey(d), Event: d.Kind, JobID: e.JobID, Job: jobName, Task: e.Task,
		Status: e.To, PreviousStatus: e.From, At: e.At.UTC(),
		Show: fmt.Sprintf("sortie jobs show %d", e.JobID),
	}
	if taskName != "" {
		p.TaskName = &taskName
	}
	if e.Attempt > 0 {
		p.Attempt = &e.Attempt
	}
	if e.Reason != "" {
		p.Reason = &e.Reason
	}
	if len(e.ExitCodes) > 0 {
		p.ExitCodes = e.ExitCodes
	}
	p.Text = text(p)
	return json.Marshal(p)
}

// text says the event in one line: "sortie job 12 (train) FAILED: exit
// code 1 (attempt 2, exit codes 1, 0). sortie jobs show 12".
func text(p Payload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sortie job %d (%s) %s", p.JobID, oneLine(p.Job), p.Status)
	if p.Reason != nil {
		fmt.Fprintf(&b, ": %s", oneLine(*p.Reason))
	}
	var more []string
	if p.Attempt != nil {
		more = append(more, fmt.Sprintf("attempt %d", *p.Attempt))
	}
	if len(p.ExitCodes) > 0 {
		codes := make([]string, len(p.ExitCodes))
		for i, c := range p.ExitCodes {
			codes[i] = "unknown"
			if c != nil {
				codes[i] = strconv.Itoa(*c)
			}
		}
		more = append(more, "exit codes "+strings.Join(codes, ", "))
	}
	if len(more) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(more, "; "))
	}
	fmt.Fprintf(&b, ". %s", p.Show)
	return b.String()
}

// oneLine keeps a name or reason on one line of a chat message.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// Sign sets the timestamp header to now and, with a key, the signature
// header over the timestamp and body.
func Sign(h http.Header, body, key []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	h.Set(HeaderTimestamp, ts)
	if len(key) > 0 {
		h.Set(HeaderSignature, "sha256="+hex.EncodeToString(mac(key, ts, body)))
	}
}

func mac(key []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Verify is the receiver's check, as the README describes it: the
// signature must be the HMAC of the timestamp, a dot and the body, and the
// timestamp within tolerance of now, so a captured request cannot be
// replayed later.
func Verify(h http.Header, body, key []byte, now time.Time, tolerance time.Duration) error {
	ts := h.Get(HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%s %q is not a Unix time", HeaderTimestamp, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%s is %s away from now: a replay, or a clock off", HeaderTimestamp, d.Round(time.Second))
	}
	sig, ok := strings.CutPrefix(h.Get(HeaderSignature), "sha256=")
	if !ok {
		return fmt.Errorf("no %s header starting sha256=", HeaderSignature)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, ts, body)) {
		return errors.New("the signature does not match the body")
	}
	return nil
}
