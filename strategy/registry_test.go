package strategy_test

// The placement tests parse task files, which name the clouds the
// registry registers with schema.
import _ "sortie/controller/clouds"
