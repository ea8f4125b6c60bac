console.log("stream widgets");
