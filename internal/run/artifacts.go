package run

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/runner"
)

// Artifact is a file a run left in /work/output (runjob.Artifact).
type Artifact = runjob.Artifact

// Planned is an artifact to reserve room for (runjob.Planned).
type Planned = runjob.Planned

// MaxArtifacts caps how many files of one run are kept.
const MaxArtifacts = runjob.MaxArtifacts

// leftOutNotice says which files of /work/output were not kept because they did not fit
// in its cap (limit), by apparent size.
func leftOutNotice(limit int64, l runner.LeftOut) contract.Output {
	names := make([]string, len(l.Files))
	for i, f := range l.Files {
		names[i] = fmt.Sprintf("output/%s (%s)", f.Path, runner.HumanBytes(f.Bytes))
	}
	list := strings.Join(names, ", ")
	if more := l.Count - len(l.Files); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	n := contract.Notice("warning", "Artifacts over the output limit (%s) were not kept: %s; %s in all. Files count by their apparent size, holes of sparse files included.",
		runner.HumanBytes(limit), list, runner.HumanBytes(l.Bytes))
	n.Reason = NoticeOutputLimit
	n.Params = map[string]string{"limit": runner.HumanBytes(limit), "files": list, "total": runner.HumanBytes(l.Bytes)}
	if more := l.Count - len(l.Files); more > 0 {
		n.Params["files"], n.Params["more"] = strings.Join(names, ", "), strconv.Itoa(more)
	}
	return n
}

// LogText returns a run's stdout or stderr as valid UTF-8 text, with a last line saying
// when it was cut.
func LogText(b []byte, truncated bool) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if truncated {
		s += "\n[output truncated: only the first " + strconv.Itoa(len(b)) + " bytes were kept]"
	}
	return s
}
