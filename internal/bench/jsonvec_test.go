package bench

var jsonVectorWants = map[string]vectorWant{}
