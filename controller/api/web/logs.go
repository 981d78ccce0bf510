package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"unicode/utf8"

	"sortie/controller/contract"
)

// ndjson writes each piece as a LogEvent and flushes it.
type ndjson struct {
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
}

func (n *ndjson) start() {
	if !n.started {
		n.w.Header().Set("Content-Type", "application/x-ndjson")
		n.w.Header().Set("X-Content-Type-Options", "nosniff")
		n.w.WriteHeader(http.StatusOK)
		n.started = true
	}
}

func (n *ndjson) send(e contract.LogEvent) error {
	n.start()
	if err := n.enc.Encode(e); err != nil {
		return err
	}
	if f, ok := n.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

func (n *ndjson) Write(p []byte) (int, error) {
	e := contract.LogEvent{Text: string(p)}
	if !utf8.Valid(p) {
		e = contract.LogEvent{Bytes: append([]byte(nil), p...)}
	}
	if err := n.send(e); err != nil {
		return 0, err
	}
	return len(p), nil
}

// LogReader is what StreamLogs asks: the job, which refuses one the
// asker may not read, and its logs.
type LogReader interface {
	Show(ctx context.Context, id int64) (*contract.JobDetail, error)
	Logs(ctx context.Context, req contract.LogsRequest, w io.Writer) error
}

// StreamLogs answers GET /v1/jobs/{id}/logs for svc's asker: a job's logs
// as newline-delimited LogEvents, with follow=true until its last attempt
// ends or the client goes (the request's context ends the service's
// loop). An error before the stream begins is returned unwritten; the
// dashboard's log view is this same stream.
func StreamLogs(w http.ResponseWriter, r *http.Request, svc LogReader) error {
	id, err := PathID(r)
	if err != nil {
		return err
	}
	task, err := IntQuery(r, "task", 0)
	if err != nil {
		return err
	}
	attempt, err := IntQuery(r, "attempt", 0)
	if err != nil {
		return err
	}
	follow, err := BoolQuery(r, "follow")
	if err != nil {
		return err
	}
	fromStart, err := BoolQuery(r, "from_start")
	if err != nil {
		return err
	}
	steps, err := BoolQuery(r, "steps")
	if err != nil {
		return err
	}
	// A job that does not exist, or that this user may not read, is a
	// plain error before the stream begins.
	if _, err := svc.Show(r.Context(), id); err != nil {
		return err
	}
	out := &ndjson{w: w, enc: json.NewEncoder(w)}
	req := contract.LogsRequest{ID: id, Task: task, Attempt: attempt, Follow: follow, FromStart: fromStart,
		Banner: func(a contract.AttemptView) { _ = out.send(contract.LogEvent{Attempt: &a}) }}
	if steps {
		req.Step = func(text string) { _ = out.send(contract.LogEvent{Step: text}) }
	}
	err = svc.Logs(r.Context(), req, out)
	if r.Context().Err() != nil {
		return nil // the client went
	}
	end := &contract.LogEnd{}
	if err != nil {
		_, d := Detail(err)
		end.Error = &d
	}
	return out.send(contract.LogEvent{End: end})
}
