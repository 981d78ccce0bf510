package schema

// varRef matches $NAME and ${NAME} as SkyPilot finds them in file_mounts
// and workdir: a brace on either side is optional, so "${NAME" and
// "$NAME}" are references too.
var varRef = lazyRegexp(`\$\{?\b([a-zA-Z_][a-zA-Z0-9_]*)\b\}?`)

// substitute fills $NAME and ${NAME} from envs. A name envs lacks is left
// as written, as SkyPilot leaves it.
func substitute(s string, envs map[string]string) string {
	if len(envs) == 0 {
		return s
	}
	return varRef().ReplaceAllStringFunc(s, func(ref string) string {
		name := varRef().FindStringSubmatch(ref)[1]
		if v, ok := envs[name]; ok {
			return v
		}
		return ref
	})
}
