package schema_test

// schema names no cloud: its tests read task files with the clouds the
// registry registers, as every program that parses them does.
import _ "sortie/controller/clouds"
