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

// fillVars are what ${VAR} in file_mounts and workdir is filled from.
type fillVars struct {
	envs    map[string]string
	secrets map[string]*string
}

// fill substitutes envs into s. SkyPilot fills secrets in too; sortie
// does not, since the result is stored and shown, and says so rather than
// leave the reference silently unfilled.
func (d *decoder) fill(path, s string, vars fillVars) string {
	if d.filled {
		return s
	}
	out := substitute(s, vars.envs)
	for _, m := range varRef().FindAllStringSubmatch(out, -1) {
		if _, isSecret := vars.secrets[m[1]]; isSecret {
			d.ps.add(path, s, "refers to the secret %s; secrets are not filled into paths, which are stored and shown: give the value under envs instead", m[1])
			break
		}
	}
	return out
}
