package api_test

import (
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestRunErrorSourceJSON: a run's JSON says where its error came from in error_source, on
// this node and on a cluster's worker (whose report the API node judges): the tool's own
// message, a crash, a result that broke the contract; null when the run succeeded.
func TestRunErrorSourceJSON(t *testing.T) {
	apptest.EachOf(t, []apptest.Backend{apptest.Backends[0], apptest.ClusterBackend}, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ulla", "user")
		cases := []struct {
			slug, source, status string
			want                 any // error_source: a string, or nil for null
		}{
			{"meddelande", "from skrip_toolkit import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('Filen saknar kolumnen namn.')\n", "failed", "tool"},
			{"krasch", "def run_tool(i, o):\n    raise ValueError('oops')\n", "failed", "crash"},
			{"trasig", "import os\ndef run_tool(i, o):\n    open(os.environ['SKRIPTOTEKET_RESULT_PATH'], 'w').write('[1]')\n    os._exit(0)\n", "failed", "policy"},
			{"klar", "def run_tool(i, o):\n    return 'ok'\n", "succeeded", nil},
		}
		for _, tc := range cases {
			publish(t, env, tc.slug, tc.source)
			a := runUpload(t, env, u.Token, tc.slug, nil, nil, `{}`, "")
			got, present := a.body["error_source"]
			if a.status != 201 || a.body["status"] != tc.status || !present || got != tc.want {
				t.Errorf("%s: %d, status %v, error_source %#v (present %v); want %s, %#v\n%s", tc.slug, a.status, a.body["status"], got, present, tc.status, tc.want, a.raw)
			}
			// The same from GET, and in the list.
			one := send(t, env, "GET", "/api/v1/runs/"+a.body["run_id"].(string), u.Token, "", nil)
			if one.body["error_source"] != tc.want {
				t.Errorf("%s: GET gives error_source %#v; want %#v", tc.slug, one.body["error_source"], tc.want)
			}
		}
		list := send(t, env, "GET", "/api/v1/runs", u.Token, "", nil)
		if strings.Count(list.raw, `"error_source":`) != len(cases) {
			t.Errorf("the run list lacks error_source on some run:\n%s", list.raw)
		}
	})
}
