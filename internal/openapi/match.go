package openapi

import "strings"

// Match finds the route of a request with method and path in routes, the one with the
// most literal segments first, and the value of its {name...} parameter if it has one
// (a {name...} parameter may hold slashes, and may stand before literal segments).
func Match(routes []Route, method, path string) (Route, string, bool) {
	segs := strings.Split(path, "/")
	best, bestScore, bestRest := Route{}, -1, ""
	for _, rt := range routes {
		if rt.Method != method {
			continue
		}
		score, rest, ok := matchPath(strings.Split(strings.ReplaceAll(rt.Path, "{$}", ""), "/"), segs)
		if ok && score > bestScore {
			best, bestScore, bestRest = rt, score, rest
		}
	}
	return best, bestRest, bestScore >= 0
}

// matchPath matches request segments to a template's; score is how many literal
// segments matched.
func matchPath(tmpl, segs []string) (score int, rest string, ok bool) {
	restAt := -1
	for i, t := range tmpl {
		if strings.HasSuffix(t, "...}") {
			restAt = i
		}
	}
	if restAt < 0 {
		if len(tmpl) != len(segs) {
			return 0, "", false
		}
		s, ok := matchSegs(tmpl, segs)
		return s, "", ok
	}
	after := len(tmpl) - restAt - 1
	if len(segs) < len(tmpl) {
		return 0, "", false
	}
	s1, ok1 := matchSegs(tmpl[:restAt], segs[:restAt])
	s2, ok2 := matchSegs(tmpl[restAt+1:], segs[len(segs)-after:])
	middle := segs[restAt : len(segs)-after]
	if !ok1 || !ok2 || strings.Join(middle, "") == "" {
		return 0, "", false
	}
	return s1 + s2, strings.Join(middle, "/"), true
}

func matchSegs(tmpl, segs []string) (int, bool) {
	score := 0
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return 0, false
			}
			continue
		}
		if t != segs[i] {
			return 0, false
		}
		score++
	}
	return score, true
}
