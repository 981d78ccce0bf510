package service

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
)

// Logs writes a job's logs to w: kept copies for ended attempts, the node's
// live log for a running one. Lines of a multi-node task are prefixed with
// their node's rank.
func (s *Service) Logs(ctx context.Context, req contract.LogsRequest, w io.Writer) error {
	j, err := s.job(ctx, req.ID)
	if err != nil {
		return err
	}
	if j.Status.Terminal() {
		at, why, err := s.Store.LogsRemoved(ctx, j.ID)
		if err != nil {
			return fmt.Errorf("job %d: %w", j.ID, err)
		}
		if at != nil {
			fmt.Fprintf(w, "sortie: the logs of job %d were removed on %s (%s ago): %s\n",
				j.ID, at.UTC().Format("2006-01-02 15:04:05 UTC"), contract.Age(s.Now().Sub(*at)), why)
			return fmt.Errorf("job %d: %w, as said above", j.ID, contract.ErrLogsRemoved)
		}
	}
	poll := req.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	as, err := s.Store.Attempts(ctx, j.ID)
	if err != nil {
		return fmt.Errorf("job %d: attempts: %w", j.ID, err)
	}
	start, err := pickAttempt(as, req)
	if err != nil {
		return err
	}
	if !req.Follow {
		if start < 0 {
			return nil
		}
		cur := newCursor(false)
		if _, err := s.emit(ctx, as[start], cur, w); err != nil {
			return err
		}
		if cur.notKept > 0 {
			return fmt.Errorf("%w: %d node(s) of attempt %d, as said above", contract.ErrLogNotKept, cur.notKept, as[start].Attempt)
		}
		return nil
	}
	// Follow: print attempt after attempt until the job has ended and its
	// last attempt is printed whole.
	shown := 0 // attempts fully printed, by id order position
	if start > 0 {
		shown = start
	}
	cur := newCursor(true)
	var steps *stepper
	if req.Step != nil {
		steps = newStepper(req.Step)
		steps.from = max(start, 0)
	}
	for {
		if steps != nil {
			// The job before its attempts: a job read as ended has
			// every attempt ended.
			if j, err = s.Store.Job(ctx, req.ID); err != nil {
				return fmt.Errorf("read job %d: %w", req.ID, err)
			}
		}
		as, err = s.Store.Attempts(ctx, j.ID)
		if err != nil {
			return fmt.Errorf("job %d: attempts: %w", j.ID, err)
		}
		if steps != nil {
			if err := s.step(ctx, steps, j, as, shown); err != nil {
				return err
			}
		}
		if shown < len(as) {
			a := as[shown]
			if cur.fresh && req.Banner != nil {
				req.Banner(viewAttempt(a, s.now()))
			}
			cur.fresh = false
			done, err := s.emit(ctx, a, cur, w)
			if err != nil {
				return err
			}
			if done {
				shown++
				cur = newCursor(true)
				continue
			}
		} else if j, err = s.Store.Job(ctx, req.ID); err != nil {
			return fmt.Errorf("read job %d: %w", req.ID, err)
		} else if j.Status.Terminal() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

func pickAttempt(as []*store.Attempt, req contract.LogsRequest) (int, error) {
	if req.Attempt == 0 {
		if req.FromStart || len(as) == 0 {
			if len(as) == 0 && !req.Follow {
				return -1, nil
			}
			return 0, nil
		}
		return len(as) - 1, nil
	}
	for i, a := range as {
		if a.TaskIdx == req.Task && a.Attempt == req.Attempt {
			return i, nil
		}
	}
	return -1, fmt.Errorf("attempt %d of task %d: %w", req.Attempt, req.Task, contract.ErrNoAttempt)
}

// cursor is how far each node's log of one attempt has been printed.
type cursor struct {
	offsets []int64
	partial [][]byte
	fresh   bool
	// following: a log that cannot be read this time is read at the next
	// poll instead of ending the command.
	following bool
	// notKept counts the nodes whose log was not kept, each said so.
	notKept int
}

func newCursor(following bool) *cursor { return &cursor{fresh: true, following: following} }

func (c *cursor) grow(n int) {
	for len(c.offsets) < n {
		c.offsets = append(c.offsets, 0)
		c.partial = append(c.partial, nil)
	}
}

// emit prints what is new in attempt a's logs and says whether a has ended
// and been printed whole.
func (s *Service) emit(ctx context.Context, a *store.Attempt, cur *cursor, w io.Writer) (bool, error) {
	n := len(a.InstanceIDs)
	if a.State == lifecycle.AttemptEnded {
		n = max(n, countKept(s.Home, a))
		cur.grow(n)
		for rank := 0; rank < n; rank++ {
			if why, ok := notKept(s.Home, a, rank); ok {
				cur.notKept++
				if _, err := fmt.Fprintf(w, "sortie: the log of node %d was not kept: %s\n", rank, why); err != nil {
					return false, err
				}
				continue
			}
			for {
				b, err := readKept(s.Home, a, rank, cur.offsets[rank])
				if err != nil {
					return false, err
				}
				cur.offsets[rank] += int64(len(b))
				if err := cur.write(w, rank, n, b, len(b) == 0); err != nil {
					return false, err
				}
				if len(b) == 0 {
					break
				}
			}
		}
		return true, nil
	}
	if a.State != lifecycle.AttemptRunning || a.Cloud == "" {
		return false, nil
	}
	var chunks [][]byte
	var err error
	switch {
	case s.Clouds.Has(a.Cloud):
		var prov provision.Provider
		if prov, err = s.Clouds.Provider(ctx, a.Cloud); err == nil {
			chunks, err = LiveLogs(ctx, prov, a, cur.offsets)
		}
	case s.RemoteLogs != nil:
		chunks, err = s.RemoteLogs(ctx, a.JobID, a.TaskIdx, a.Attempt, cur.offsets)
		if err != nil && cur.following {
			// Asked again at the next poll, like a node that did not
			// answer; the kept copy follows when the attempt ends.
			return false, nil
		}
	}
	if err != nil {
		return false, err
	}
	n = len(chunks)
	cur.grow(n)
	for rank, b := range chunks {
		cur.offsets[rank] += int64(len(b))
		if err := cur.write(w, rank, n, b, false); err != nil {
			return false, err
		}
	}
	return false, nil
}

// LiveLogs reads what each node's log of the running attempt a holds past
// offsets[rank] (0 where offsets is short). A cluster that is gone or
// unknown gives nothing: its kept copy follows when the attempt ends. A node
// that cannot be reached gives nothing this time.
func LiveLogs(ctx context.Context, prov provision.Provider, a *store.Attempt, offsets []int64) ([][]byte, error) {
	got, err := prov.Status(ctx, []string{a.Cluster})
	cl := got[a.Cluster]
	if err != nil || cl == nil {
		return nil, nil
	}
	out := make([][]byte, len(cl.Nodes))
	for rank := range cl.Nodes {
		nt, err := node.TaskOf(ctx, prov, cl, rank, a.Attempt)
		if err != nil {
			continue
		}
		var off int64
		if rank < len(offsets) {
			off = offsets[rank]
		}
		b, err := nt.ReadLog(ctx, off)
		nt.Close()
		if err == nil {
			out[rank] = b
		}
	}
	return out, nil
}

// write prints b of node rank; with several nodes, each line gets the
// node's prefix and only whole lines are printed until flush.
func (c *cursor) write(w io.Writer, rank, nodes int, b []byte, flush bool) error {
	if nodes <= 1 {
		_, err := w.Write(b)
		return err
	}
	buf := append(c.partial[rank], b...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(&out, "(node %d) %s\n", rank, buf[:i])
		buf = buf[i+1:]
	}
	if flush && len(buf) > 0 {
		fmt.Fprintf(&out, "(node %d) %s\n", rank, buf)
		buf = nil
	}
	c.partial[rank] = append([]byte(nil), buf...)
	_, err := w.Write(out.Bytes())
	return err
}

// countKept counts the nodes whose log was kept, or said not to be.
func countKept(h string, a *store.Attempt) int {
	n := 0
	for {
		if _, ok := home.KeptNodeLog(h, a.JobID, a.TaskIdx, a.Attempt, n); !ok {
			if _, ok := home.KeptNodeLogMissing(h, a.JobID, a.TaskIdx, a.Attempt, n); !ok {
				return n
			}
		}
		n++
	}
}

// notKept says why node rank's log of the ended attempt a was not kept,
// when it was not.
func notKept(h string, a *store.Attempt, rank int) (string, bool) {
	if _, ok := home.KeptNodeLog(h, a.JobID, a.TaskIdx, a.Attempt, rank); ok {
		return "", false
	}
	path, ok := home.KeptNodeLogMissing(h, a.JobID, a.TaskIdx, a.Attempt, rank)
	if !ok {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	why := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	why = cmp.Or(why, "no reason was recorded")
	return why, true
}

// readKept reads node rank's kept log of a from off on (readFrom), where
// it is kept: nothing when it is not.
func readKept(h string, a *store.Attempt, rank int, off int64) ([]byte, error) {
	path, ok := home.KeptNodeLog(h, a.JobID, a.TaskIdx, a.Attempt, rank)
	if !ok {
		return nil, nil
	}
	return readFrom(path, off)
}

func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	// A chunk at a time: a kept log can be larger than memory.
	return io.ReadAll(io.LimitReader(f, node.MaxLogChunk))
}
