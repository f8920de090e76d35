"use strict";
(function(){
const ST=["pass","skip","warn","fail","error"];
const $=(id)=>document.getElementById(id);
function el(tag,attrs,...kids){const e=document.createElement(tag);if(attrs)for(const k in attrs){if(k==="text")e.textContent=attrs[k];
 else if(k==="cls")e.className=attrs[k];else if(k.startsWith("on"))e.addEventListener(k.slice(2),attrs[k]);else e.setAttribute(k,attrs[k]);}
 for(const c of kids){if(c==null)continue;e.appendChild(typeof c==="string"?document.createTextNode(c):c);}return e;}
const NS="http://www.w3.org/2000/svg";
function sv(tag,attrs,text){const e=document.createElementNS(NS,tag);for(const k in attrs)e.setAttribute(k,attrs[k]);if(text!=null)e.textContent=text;
 return e;}
function num(v){if(v==null||typeof v!=="number")return v==null?"-":String(v);if(Number.isInteger(v))return String(v);const a=Math.abs(v);
 return String(Number(v.toPrecision(a>=1000?6:4)));}
function bytes(v){const u=["B","KiB","MiB","GiB","TiB"];let i=0;
 while(Math.abs(v)>=1024&&i<u.length-1){v/=1024;i++;}return (Number.isInteger(v)?v:Number(v.toPrecision(3)))+" "+u[i];}
function badge(s){return el("span",{cls:"badge "+s,text:s});}
let D=null;
const S=(i)=>D.S[i];
const HN=(i)=>i>=0?D.hosts[i][0]:"";
const tip=el("div",{cls:"tip"});document.body.appendChild(tip);
function showTip(ev,text){tip.textContent=text;tip.style.display="block";tip.style.left=(ev.clientX+12)+"px";tip.style.top=(ev.clientY+12)+"px";}
function hideTip(){tip.style.display="none";}
function parse(i){if(!i)return null;try{return JSON.parse(S(i));}catch(e){return S(i);}}
function recLabel(r){let n=S(r[1]);if(r[2])n+="["+S(r[2])+"]";if(r[3]>=0){if(!r[2])n+="[-]";n+="["+HN(r[3])+"]";}return n;}
async function load(){
 const node=$("report-data");const mode=node.getAttribute("data-mode");const text=node.textContent;
 if(mode==="gzip"){
  const bin=atob(text.trim());const buf=new Uint8Array(bin.length);for(let i=0;i<bin.length;i++)buf[i]=bin.charCodeAt(i);
  if(typeof DecompressionStream==="undefined"){
   throw new Error("this browser cannot decompress the report data (no DecompressionStream); open results.json instead");}
  const stream=new Blob([buf]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
 }
 return JSON.parse(text);
}
// ---------------------------------------------------------------- tables: sort + filter
function sortable(table){
 const ths=table.querySelectorAll("th");ths.forEach((th,col)=>th.addEventListener("click",()=>{
  const body=table.tBodies[0];const rows=Array.from(body.rows);const dir=th.dataset.dir==="a"?-1:1;th.dataset.dir=dir===1?"a":"d";
  const key=(r)=>{const c=r.cells[col];const v=c.dataset.v!==undefined?c.dataset.v:c.textContent;
 const f=parseFloat(v);return isNaN(f)?v.toLowerCase():f;};
  rows.sort((a,b)=>{const x=key(a),y=key(b);return (x>y?1:x<y?-1:0)*dir;});rows.forEach(r=>body.appendChild(r));}));
}
function hostFilter(){
 const q=$("hq").value.toLowerCase(),st=$("hs").value;let shown=0;
 for(const tr of $("hosts").tBodies[0].rows){const ok=(!st||tr.dataset.s===st)&&(!q||tr.textContent.toLowerCase().includes(q));
 tr.style.display=ok?"":"none";if(ok)shown++;}
 $("hcount").textContent=shown+" shown";
}
// ---------------------------------------------------------------- problems (records that count toward a host)
let PROBLEMS=null;
function problems(){
 if(PROBLEMS)return PROBLEMS;PROBLEMS=[];
 for(let i=0;i<D.recs.length;i++){const r=D.recs[i];if(r[4]>=2&&r[11])PROBLEMS.push(i);}
 PROBLEMS.sort((a,b)=>D.recs[b][4]-D.recs[a][4]||a-b);return PROBLEMS;
}
function renderProblems(){
 const q=$("pq").value.toLowerCase(),st=$("ps").value,body=$("problems").tBodies[0];const list=problems();
 const out=[];let total=0;
 for(const i of list){const r=D.recs[i];if(st&&ST[r[4]]!==st)continue;
  if(q){const hay=(HN(r[0])+" "+recLabel(r)+" "+S(r[5])).toLowerCase();if(!hay.includes(q))continue;}
  total++;if(out.length<300)out.push(i);}
 body.textContent="";
 for(const i of out){const r=D.recs[i];body.appendChild(el("tr",null,el("td",{cls:"h"},hostLink(r[0])),el("td",null,badge(ST[r[4]])),el("td",{cls:"h",
text:recLabel(r)}),judgeCell(r),el("td",{cls:"t",text:S(r[5])}),el("td",{cls:"t",text:S(r[10])})));
 }
 if(!total&&list.length)body.appendChild(el("tr",null,el("td",{cls:"muted",colspan:6,text:"No problem matches this filter."})));
 $("pcount").textContent=total+" matching"+(total>out.length?" (first "+out.length+" shown: filter to narrow)":"");
}
function judgeCell(r){const j=S(r[13]||0);return el("td",{cls:"j"+(j==="unjudged"?" unj":""),text:j||"-",
title:j==="unjudged"?"a headline figure nothing held to an expectation: not a pass":"what judged this record's status"});}
function hostLink(h){return el("a",{text:HN(h),onclick:(e)=>{e.preventDefault();openHost(h);}});}
// ---------------------------------------------------------------- plots
function pl(n,w){return n+" "+(n===1?w:/(s|x|ch|sh)$/.test(w)?w+"es":w+"s");}
const UNITS=[["_gbyte_s","GB/s"],["_gbit_s","Gbit/s"],["_mbyte_s","MB/s"],["_mib_s","MiB/s"],["_us","µs"],["_tflops","TFLOP/s"]];
function unitOf(name){const u=UNITS.find(([s])=>(name||"").endsWith(s));return u?u[1]:"";}
function withUnit(name){const u=unitOf(name);return u?name+" ("+u+")":name;}
// the expectation: its own colour and dash-dot pattern (the curves of failing hosts are drawn in the palette below)
const EXPECT={stroke:"#1f2937","stroke-width":1.5,"stroke-dasharray":"9 3 2 3"};
// a named curve: its colour says its status (reds: fail/error, oranges: warn, greens/greys: pass), its dash pattern
// and marker (one per curve) tell overlapping curves apart
const PALETTES=[["#2ca02c","#17becf","#7f7f7f","#0e7c61"],["#7f7f7f","#999"],["#ff7f0e","#b8860b","#d4a017"],
 ["#d62728","#9467bd","#8c564b","#e377c2"],["#9467bd","#d62728","#8c564b"]];
const DASHES=["","7 3","2 3","10 3 2 3","4 2 1 2 1 2"];
const MARKERS=["circle","square","triangle","diamond","cross"];
function curveStyle(k,st){const pal=PALETTES[st]||PALETTES[3];return {color:pal[k%pal.length],dash:DASHES[k%DASHES.length],marker:MARKERS[k%MARKERS.length]};}
function marker(kind,x,y,color){const r=3.4;
 if(kind==="circle")return sv("circle",{cx:x,cy:y,r:r,fill:"#fff",stroke:color,"stroke-width":1.5});
 const d=kind==="square"?"M"+(x-r)+" "+(y-r)+"h"+2*r+"v"+2*r+"h"+(-2*r)+"z":kind==="triangle"?"M"+x+" "+(y-r-1)+"L"+(x+r+0.5)+" "+(y+r)+"L"+(x-r-0.5)+" "+(y+r)+"z":
 kind==="diamond"?"M"+x+" "+(y-r-1)+"L"+(x+r+1)+" "+y+"L"+x+" "+(y+r+1)+"L"+(x-r-1)+" "+y+"z":"M"+(x-r)+" "+(y-r)+"L"+(x+r)+" "+(y+r)+"M"+(x+r)+" "+(y-r)+"L"+(x-r)+" "+(y+r);
 return sv("path",{d:d,fill:kind==="cross"?"none":"#fff",stroke:color,"stroke-width":1.5});}
function swatch(item){const s=sv("svg",{width:30,height:12,style:"vertical-align:middle;margin:0 4px 0 12px"});
 if(item.fill){s.appendChild(sv("rect",{x:2,y:2,width:26,height:8,fill:item.fill,opacity:item.opacity||1}));return s;}
 s.appendChild(sv("line",Object.assign({x1:1,x2:29,y1:6,y2:6,stroke:item.color,"stroke-width":item.width||1.6},item.dash?{"stroke-dasharray":item.dash}:{})));
 if(item.marker)s.appendChild(marker(item.marker,15,6,item.color));return s;}
function legendBox(items){const lg=el("div",{cls:"legend"});
 for(const it of items)lg.appendChild(el("span",{cls:"li"},swatch(it),it.name));return lg;}
function niceTicks(max,n){if(!(max>0))max=1;const raw=max/n;
 const p=Math.pow(10,Math.floor(Math.log10(raw)));const m=[1,2,2.5,5,10].find(x=>x*p>=raw)*p;
 const top=Math.ceil(max/m-1e-9)*m;const out=[];for(let k=0;k*m<=top+m*1e-6;k++)out.push(k*m);return out;}
function curveChart(p,extra,small){
 const W=small?520:620,H=small?260:300,L=58,R=14,T=16,B=44;const xs=p.sizes.map(Math.log2);const x0=xs[0],x1=xs[xs.length-1];
 let ymax=Math.max(...p.p90.filter(v=>v!=null),...p.med.filter(v=>v!=null),p.floor||0);
 for(const c of (extra||[]))for(const v of c.ys)if(v!=null&&v>ymax)ymax=v;
 const ticks=niceTicks(ymax||1,5);ymax=ticks[ticks.length-1]||1;
 const X=(i)=>L+(W-L-R)*(x1>x0?(xs[i]-x0)/(x1-x0):0.5),Y=(v)=>H-B-(H-T-B)*(v/ymax);
 const s=sv("svg",{width:W,height:H,viewBox:"0 0 "+W+" "+H,role:"img"});
 s.appendChild(sv("rect",{x:0,y:0,width:W,height:H,fill:"#fff"}));
 for(const t of ticks){s.appendChild(sv("line",{x1:L,x2:W-R,y1:Y(t),y2:Y(t),stroke:"#eceef1"}));
 s.appendChild(sv("text",{x:L-6,y:Y(t)+4,"text-anchor":"end"},num(t)));}
 const step=Math.max(1,Math.ceil(p.sizes.length/9));
 const lastI=p.sizes.length-1;p.sizes.forEach((v,i)=>{if((lastI-i)%step)return;s.appendChild(sv("line",{x1:X(i),x2:X(i),y1:H-B,y2:H-B+4,
stroke:"#444"}));s.appendChild(sv("text",{x:X(i),y:H-B+16,"text-anchor":"middle"},p.x.indexOf("bytes")>=0||p.x==="size"?bytes(v):num(v)));});
 s.appendChild(sv("line",{x1:L,x2:W-R,y1:H-B,y2:H-B,stroke:"#444"}));s.appendChild(sv("line",{x1:L,x2:L,y1:T,y2:H-B,stroke:"#444"}));
 s.appendChild(sv("text",{x:(L+W-R)/2,y:H-8,"text-anchor":"middle"},"message size (log2 axis)"));
 s.appendChild(sv("text",{x:12,y:(T+H-B)/2,"text-anchor":"middle",transform:"rotate(-90 12 "+((T+H-B)/2)+")"},withUnit(p.y)));
 const band=[];p.p90.forEach((v,i)=>{if(v!=null)band.push(X(i)+","+Y(v));});
 for(let i=p.p10.length-1;i>=0;i--)if(p.p10[i]!=null)band.push(X(i)+","+Y(p.p10[i]));
 if(p.n>1)s.appendChild(sv("polygon",{points:band.join(" "),fill:"#9cc3f0",opacity:"0.45"}));
 const line=(ys,attrs,title)=>{const pts=[];ys.forEach((v,i)=>{if(v!=null)pts.push(X(i).toFixed(1)+","+Y(v).toFixed(1));});
 const poly=sv("polyline",Object.assign({points:pts.join(" "),fill:"none"},attrs));if(title)poly.appendChild(sv("title",{},title));s.appendChild(poly);};
 line(p.med,{stroke:"#1457b8","stroke-width":2.5},"fleet median");
 const legend=[{color:"#1457b8",width:2.5,name:"fleet median ("+pl(p.n,"curve")+")"}];if(p.n>1)legend.push({fill:"#9cc3f0",opacity:0.45,name:"p10-p90"});
 if(p.floor!=null&&p.floor<=ymax){s.appendChild(sv("line",Object.assign({x1:L,x2:W-R,y1:Y(p.floor),y2:Y(p.floor)},EXPECT)));
 s.appendChild(sv("text",{x:L+4,y:Y(p.floor)-4,"text-anchor":"start",fill:EXPECT.stroke},"expected min "+num(p.floor)));}
 for(const [x,v] of p.floorAt||[]){const i=p.sizes.indexOf(x);if(i>=0)s.appendChild(marker("diamond",X(i),Y(v),EXPECT.stroke));}
 if(p.floor!=null||(p.floorAt||[]).length)legend.push(Object.assign({color:EXPECT.stroke,dash:EXPECT["stroke-dasharray"],width:1.5,
name:"expected min"},(p.floorAt||[]).length?{marker:"diamond"}:{}));
 // markers on every few points, staggered from curve to curve: curves that lie on one another still show each marker
 const every=Math.max(Math.ceil(p.sizes.length/16),Math.min((extra||[]).length,5),1);
 (extra||[]).forEach((c,k)=>{const st=curveStyle(k,c.st);line(c.ys,Object.assign({stroke:st.color,"stroke-width":1.6},st.dash?{"stroke-dasharray":st.dash}:{}),c.name);
  c.ys.forEach((v,i)=>{if(v!=null&&(i%every===k%every||i===lastI))s.appendChild(marker(st.marker,X(i),Y(v),st.color));});
  legend.push({color:st.color,dash:st.dash,marker:st.marker,name:c.name});});
 const box=el("div",{cls:"card"},el("div",{text:p.check+(p.target?" ["+p.target+"]":"")+": "+withUnit(p.y)}),s);
 box.appendChild(legendBox(legend));
 return box;
}
function curveOf(p,ri){const c=p.curves.find(c=>c[0]===ri);return c?parse(c[1]):null;}
function curveName(r){return HN(r[0])+(r[3]>=0?" -> "+HN(r[3]):"")+" ("+ST[r[4]]+")";}
function renderPlots(){
 const box=$("plots");box.textContent="";
 if(!D.plots.length){box.appendChild(el("p",{cls:"muted",text:"No record has a per-size series."}));return;}
 for(const p of D.plots){const extra=[];for(const ri of p.flagged){
 const ys=curveOf(p,ri);const r=D.recs[ri];if(ys)extra.push({ys:ys,name:curveName(r),st:r[4]});}
  box.appendChild(curveChart(p,extra));}
}
// ---------------------------------------------------------------- heat maps
function heatColor(ratio,st){if(st===4&&ratio<0)return "#8e44ad";if(ratio<0)return "#ccc";const r=ratio/1000;
 if(r>=1)return "hsl(130,55%,"+(r>1.1?48:58)+"%)";if(r>=0.95)return "hsl(75,70%,55%)";
 const t=Math.max(0,Math.min(1,(r-0.5)/0.45));return "hsl("+Math.round(45*t)+",80%,"+Math.round(45+10*t)+"%)";}
// which end of a pair the record's host is: a perftest record's host is the client, a .server record's the server
function heatRoles(m){return m.check.endsWith(".server")?["server","client"]:["client","server"];}
function heatScale(){
 const W=330,s=sv("svg",{width:W+230,height:34,role:"img"});const X=(r)=>10+(r-0.45)/0.55*W;
 for(let k=0;k<55;k++){const r=0.45+k*0.01;s.appendChild(sv("rect",{x:X(r),y:4,width:W/55+0.5,height:12,fill:heatColor(Math.round(r*1000),0)}));}
 s.appendChild(sv("rect",{x:X(1)+2,y:4,width:34,height:12,fill:heatColor(1000,0)}));
 for(const [r,t] of [[0.5,"≤50 %"],[0.75,"75 %"],[0.95,"95 %"]]){
  s.appendChild(sv("line",{x1:X(r),x2:X(r),y1:16,y2:20,stroke:"#444"}));s.appendChild(sv("text",{x:X(r),y:31,"text-anchor":"middle"},t));}
 s.appendChild(sv("text",{x:X(1)+19,y:31,"text-anchor":"middle"},"≥100 %"));
 [["#ccc","no value"],["#8e44ad","error"]].forEach(([c,t],k)=>{s.appendChild(sv("rect",{x:X(1)+56+k*80,y:4,width:12,height:12,fill:c}));
  s.appendChild(sv("text",{x:X(1)+72+k*80,y:14},t));});
 return s;}
function heatCanvas(m){
 const n=m.axis.length,cell=Math.max(2,Math.min(28,Math.floor(460/n)));
 const name=(a)=>m.bin>1?HN(a[0])+" .. "+HN(a[1]):HN(a);const short=(a)=>{const t=m.bin>1?HN(a[0]):HN(a);return t.length>18?t.slice(0,17)+"…":t;};
 const lab=Math.min(130,8+6.6*Math.max(4,...m.axis.map(a=>short(a).length)));const every=Math.max(1,Math.ceil(13/cell));
 const padL=lab+22,padT=lab+22,size=n*cell;const c=el("canvas",{width:padL+size+8,height:padT+size+8});const g=c.getContext("2d");
 g.fillStyle="#fff";g.fillRect(0,0,c.width,c.height);g.fillStyle="#f3f4f6";g.fillRect(padL,padT,size,size);
 const [rowRole,colRole]=heatRoles(m);
 g.fillStyle="#333";g.font="11px system-ui,sans-serif";g.textBaseline="middle";
 for(let i=0;i<n;i+=every){g.textAlign="right";g.fillText(short(m.axis[i]),padL-4,padT+i*cell+cell/2);
  g.save();g.translate(padL+i*cell+cell/2,padT-4);g.rotate(-Math.PI/2);g.textAlign="left";g.fillText(short(m.axis[i]),0,0);g.restore();}
 g.font="600 11px system-ui,sans-serif";g.textAlign="center";g.fillText(colRole+" (peer) →",padL+size/2,9);
 g.save();g.translate(9,padT+size/2);g.rotate(-Math.PI/2);g.fillText(rowRole+" (host) →",0,0);g.restore();
 const grid=new Map();
 for(let k=0;k<m.cells.length;k+=4){const i=m.cells[k],j=m.cells[k+1],ratio=m.cells[k+2],st=m.cells[k+3];grid.set(i*n+j,[ratio,st]);
  g.fillStyle=heatColor(ratio,st);g.fillRect(padL+j*cell,padT+i*cell,cell,cell);
  if(st>=3&&cell>=4){g.strokeStyle="#000";g.lineWidth=1;g.strokeRect(padL+j*cell+0.5,padT+i*cell+0.5,cell-1,cell-1);}}
 if(cell<8){for(let k=0;k<m.cells.length;k+=4){const ratio=m.cells[k+2],st=m.cells[k+3];if(st<3&&!(ratio>=0&&ratio<950))continue;
  const x=padL+m.cells[k+1]*cell+cell/2,y=padT+m.cells[k]*cell+cell/2;g.fillStyle=heatColor(ratio,st);g.strokeStyle="#000";g.lineWidth=1.5;
  g.beginPath();g.arc(x,y,5,0,2*Math.PI);g.fill();g.stroke();}}
 const at=(ev)=>{const b=c.getBoundingClientRect();return [Math.floor((ev.clientY-b.top-padT)/cell),Math.floor((ev.clientX-b.left-padL)/cell)];};
 const unit=unitOf(m.metric);
 const value=(ratio)=>ratio<=0||!m.ref?"":" ≈ "+num(m.lower?m.ref*1000/ratio:m.ref*ratio/1000)+(unit?" "+unit:"")+",";
 c.addEventListener("mousemove",(ev)=>{const [i,j]=at(ev);if(i<0||j<0||i>=n||j>=n){hideTip();return;}const v=grid.get(i*n+j);
  showTip(ev,rowRole+" "+name(m.axis[i])+" -> "+colRole+" "+name(m.axis[j])+": "+(v?(v[0]<0?"no value":value(v[0])+" "+Math.round(v[0]/10)+
" % of "+m.refKind)+" ("+ST[v[1]]+")":"not measured")+(m.bin>1?" [worst pair of the block]":""));});
 c.addEventListener("mouseleave",hideTip);
 c.addEventListener("click",(ev)=>{const [i]=at(ev);if(i>=0&&i<n)openHost(m.bin>1?m.axis[i][0]:m.axis[i]);});
 return [c,cell];
}
function renderHeat(){
 const box=$("heat");box.textContent="";
 if(!D.heat.length){box.appendChild(el("p",{cls:"muted",text:"No pairwise records."}));return;}
 for(const m of D.heat){
  const [c,cell]=heatCanvas(m);const [rowRole,colRole]=heatRoles(m);const unit=unitOf(m.metric);
  const card=el("div",{cls:"card"},el("div",{text:m.check+(m.target?" ["+m.target+"]":"")+": "+(m.metric?withUnit(m.metric):"status only")}),
   el("div",{cls:"muted",
text:pl(m.n,"host")+", "+pl(m.pairs,"pair")+". Row: the "+rowRole+" (the record's host); column: the "+colRole+" (its peer). "+
"Cell: "+(m.metric?m.metric+" as % of the "+m.refKind+" "+num(m.ref)+(unit?" "+unit:"")+(m.lower?" (lower is better: the ratio is inverted)":""):"status")+
"; fleet median "+num(m.median)+(unit?" "+unit:"")+
(m.bin>1?"; "+pl(m.bin,"host")+" per row/column, each block shows its worst pair":"")+"; black outline: failed pair"+
(cell<8?"; circled: pairs below 95 % or failed":"")+". Hover for names and values, click a row for its host."}),
   el("div",{cls:"wrap"},c),heatScale());
  if(m.worst.length){const t=el("table",null,el("thead",null,el("tr",null,el("th",{text:rowRole}),el("th",{text:colRole}),el("th",{text:withUnit(m.metric)}),
el("th",{text:"status"}))),el("tbody"));
   for(const w of m.worst)t.tBodies[0].appendChild(el("tr",null,el("td",{cls:"h"},hostLink(w[0])),el("td",{cls:"h"},hostLink(w[1])),el("td",{cls:"n",
text:num(w[2])}),el("td",null,badge(ST[w[3]]))));
   card.appendChild(el("div",{cls:"muted",text:"lowest pairs (below 95 % of the "+m.refKind+")"}));card.appendChild(t);}
  box.appendChild(card);}
}
// ---------------------------------------------------------------- GEMM and latency
// the dot of the lowest host: red when it failed (or errored), amber when it warned, dark grey when it passed
function dotColor(st){return st>=3?"#c0392b":st===2?"#e0a030":"#374151";}
// the expectation lines of a GEMM chart: the floor (fail below) and the soft floor (warn below), each labelled
const SOFT={stroke:"#1f2937","stroke-width":1.5,"stroke-dasharray":"2 3"};
function floorLines(g){const out=[];if(!g)return out;
 if(g.floor!=null)out.push({v:g.floor,kind:"min",style:EXPECT,text:"fail below "+num(g.floor)});
 if(g.soft!=null)out.push({v:g.soft,kind:"soft",style:SOFT,text:"warn below "+num(g.soft)});return out;}
// bars with whiskers and a dot each; ``lines``: floorLines(), drawn across the plot and labelled in a right margin of
// their own (never over a bar), labels kept apart
function bars(title,items,lines,unit,note){
 lines=lines||[];const subs=Math.max(0,...items.map(b=>(b.sub||[]).length));
 const R=lines.length?104:6,W=Math.max(260,60+items.length*56)+R-6,H=240+12*subs,L=50,B=34+12*subs,T=14;
 let ymax=Math.max(0,...lines.map(l=>l.v),...items.map(b=>b.hi!=null?b.hi:b.v));
 const ticks=niceTicks(ymax||1,4);ymax=ticks[ticks.length-1]||1;
 const Y=(v)=>H-B-(H-T-B)*v/ymax;const s=sv("svg",{width:W,height:H,role:"img"});s.appendChild(sv("rect",{x:0,y:0,width:W,height:H,fill:"#fff"}));
 for(const t of ticks){s.appendChild(sv("line",{x1:L,x2:W-R,y1:Y(t),y2:Y(t),stroke:"#eceef1"}));
 s.appendChild(sv("text",{x:L-5,y:Y(t)+4,"text-anchor":"end"},num(t)));}
 items.forEach((b,k)=>{const x=L+12+k*56;const r=sv("rect",{x:x,y:Y(b.v),width:30,height:Math.max(0,H-B-Y(b.v)),
fill:b.color||"#5b8fd6"});r.appendChild(sv("title",{},b.title));s.appendChild(r);
  if(b.lo!=null){s.appendChild(sv("line",{x1:x+15,x2:x+15,y1:Y(b.lo),y2:Y(b.hi),stroke:"#222"}));}
  if(b.min!=null){const c=sv("circle",{cx:x+15,cy:Y(b.min),r:4.5,fill:b.minColor||dotColor(4),stroke:"#fff","stroke-width":1});
 c.appendChild(sv("title",{},b.minTitle||""));s.appendChild(c);}
  s.appendChild(sv("text",{x:x+15,y:H-B+14,"text-anchor":"middle"},b.label));
  (b.sub||[]).forEach((t,i)=>s.appendChild(sv("text",{x:x+15,y:H-B+27+12*i,"text-anchor":"middle",style:"font-size:9px"},t)));});
 s.appendChild(sv("line",{x1:L,x2:W-R,y1:H-B,y2:H-B,stroke:"#444"}));
 let last=1e9;for(const l of lines.slice().sort((a,b)=>a.v-b.v)){
  s.appendChild(sv("line",Object.assign({x1:L,x2:W-R,y1:Y(l.v),y2:Y(l.v),"data-line":l.kind},l.style)));
  const y=Math.min(Y(l.v)+4,last-14);last=y;     // upwards from the lowest line, a line of text apart at least
  s.appendChild(sv("text",{x:W-R+4,y:y,"text-anchor":"start",fill:l.style.stroke,"data-label":l.kind},l.text));}
 const card=el("div",{cls:"card"},el("div",{text:title+(unit?" ("+unit+")":"")}),s);
 if(note)card.appendChild(note);
 return card;
}
function gemmLegend(g){const items=[{fill:"#5b8fd6",name:"fleet median"},{color:"#222",width:1.2,name:"p10-p90"}];
 for(const [st,n] of [[3,"lowest host: failed"],[2,"warned"],[0,"passed"]])items.push({color:dotColor(st),marker:"dot",name:n});
 for(const l of floorLines(g))items.push({color:l.style.stroke,dash:l.style["stroke-dasharray"],width:1.5,
name:l.kind==="min"?"expected min (fail below)":"soft floor (warn below)"});
 const lg=legendBox([]);for(const it of items){const sw=it.marker==="dot"?sv("svg",{width:16,height:12,style:"vertical-align:middle;margin:0 2px 0 10px"}):swatch(it);
 if(it.marker==="dot")sw.appendChild(sv("circle",{cx:8,cy:6,r:4.5,fill:it.color}));lg.appendChild(el("span",{cls:"li"},sw,it.name));}
 return lg;}
function renderGemm(){
 const box=$("gemm");box.textContent="";
 for(const g of D.gemm){box.appendChild(bars(g.check+": per GPU over "+pl(Math.max(...g.bars.map(b=>b.n)),"host"),g.bars.map(b=>({v:b.med,lo:b.p10,
hi:b.p90,min:b.min,label:"GPU "+b.gpu,
  title:"GPU "+b.gpu+": median "+num(b.med)+" over "+pl(b.n,"host"),minTitle:"lowest: "+HN(b.minHost)+" "+num(b.min)+" ("+ST[b.minStatus]+")",
minColor:dotColor(b.minStatus)})),floorLines(g),"TFLOP/s",gemmLegend(g)));}
 for(const l of D.lat){const v=l.values,lo=v[0],hi=v[v.length-1],nb=Math.min(30,Math.max(5,Math.ceil(Math.sqrt(v.length))));
 const w=(hi-lo)/nb||1;const cnt=new Array(nb).fill(0);
  for(const x of v)cnt[Math.min(nb-1,Math.floor((x-lo)/w))]++;
  box.appendChild(bars(l.check+(l.target?" ["+l.target+"]":"")+": distribution of "+withUnit(l.metric)+" over "+pl(v.length,"record"),cnt.map((c,i)=>({v:c,
label:num(lo+i*w),title:pl(c,"record")+" in "+num(lo+i*w)+" .. "+num(lo+(i+1)*w)})),null,"records"));
 }
 if(!D.gemm.length&&!D.lat.length)box.appendChild(el("p",{cls:"muted",text:"No GEMM or latency records."}));
}
// ---------------------------------------------------------------- per-host drill-down
function kvText(obj){if(obj==null)return "";if(typeof obj!=="object")return String(obj);
 return Object.keys(obj).sort().map(k=>k+" = "+valText(obj[k])).join("\n");}
function valText(v){if(typeof v==="number")return num(v);if(v&&typeof v==="object"&&!Array.isArray(v)){
 const t=Object.keys(v).filter(k=>k!=="source").map(k=>k+" "+valText(v[k])).join(", ");return v.source?t+" ("+v.source+")":t;}
 return typeof v==="string"?v:JSON.stringify(v);}
function openHost(h){
 const box=$("detail");box.textContent="";box.style.display="block";
 const a=D.starts[h],b=D.starts[h+1];const st=D.hosts[h][1];
 box.appendChild(el("h3",null,"Host ",el("span",{cls:"h",text:HN(h)})," ",st>=0?badge(ST[st]):el("span",{cls:"muted",text:"(peer only)"}),el("span",
{cls:"muted",text:"  "+pl(b-a,"record")+(D.unlisted[h]?", "+pl(D.unlisted[h],"passing pair")+" not listed (see the heat map)":"")}),
  " ",el("a",{text:"[close]",onclick:()=>{box.style.display="none";}})));
 const extra=[];const gemm=[];
 const t=el("table",null,el("thead",null,el("tr",null,...["check","status","judged by","reason","metrics","expect","facts","since last run"].map(x=>el("th",
{text:x})))),el("tbody"));
 for(let i=a;i<b;i++){const r=D.recs[i];const tr=el("tr",null,el("td",{cls:"h",text:recLabel(r)+(r[12]?" (analysis)":"")}),el("td",null,
badge(ST[r[4]])),judgeCell(r),
   el("td",{cls:"t"},S(r[5]),r[9]?el("details",null,el("summary",{text:"output"}),el("pre",{text:S(r[9])})):null),
   el("td",{cls:"kv"},el("pre",{text:kvText(parse(r[6]))})),el("td",{cls:"kv"},r[7]?el("pre",{text:kvText(parse(r[7]))}):null),
   el("td",{cls:"kv"},r[8]?el("details",null,el("summary",{text:"facts"}),el("pre",{text:kvText(parse(r[8]))})):null),el("td",{cls:"t",
text:S(r[10])}));
  if(!r[11]&&r[3]>=0)tr.title="a pairwise record judged by attribution: it counts toward no host (see the .node/.link records)";
  t.tBodies[0].appendChild(tr);
  const m=parse(r[6]);if(m&&!r[12]&&S(r[1]).startsWith("gpu.gemm")&&typeof m.tflops==="number")gemm.push({check:S(r[1]),v:m.tflops,label:"GPU "+S(r[2]),
sub:[m.sm_clock_mhz!=null?num(m.sm_clock_mhz)+" MHz":null,m.power_w!=null?num(m.power_w)+" W":null].filter(x=>x),
color:r[4]>=3?"#c0392b":r[4]===2?"#e0a030":"#5b8fd6",title:recLabel(r)+": "+num(m.tflops)+" TFLOP/s"});
 }
 const charts=el("div",{cls:"grid"});const mineAll=[];
 for(const p of D.plots){const mine=p.curves.filter(c=>c[0]>=a&&c[0]<b);
 if(mine.length)mineAll.push([Math.max(...mine.map(c=>D.recs[c[0]][4])),p,mine]);}
 mineAll.sort((x,y)=>y[0]-x[0]);
 for(const [_w,p,mine] of mineAll){const ex=mine.slice(0,8).map(c=>{const r=D.recs[c[0]];return {ys:parse(c[1]),name:recLabel(r)+" ("+ST[r[4]]+")",st:r[4]};});
 charts.appendChild(curveChart(p,ex,true));}
 const checks=[...new Set(gemm.map(g=>g.check))];for(const c of checks){
 const fl=floorLines(D.gemm.find(g=>g.check===c));charts.appendChild(bars(c+" on "+HN(h),gemm.filter(g=>g.check===c),fl,"TFLOP/s"));}
 t.className="detail";box.appendChild(el("div",{cls:"wrap scroll"},t));box.appendChild(charts);
 box.scrollIntoView({behavior:"auto",block:"start"});
}
// ---------------------------------------------------------------- start
function start(){
 sortable($("hosts"));$("hq").addEventListener("input",hostFilter);$("hs").addEventListener("change",hostFilter);
 document.querySelectorAll("[data-host]").forEach(a=>a.addEventListener("click",(e)=>{e.preventDefault();if(D)openHost(+a.dataset.host);}));
 document.querySelectorAll("[data-st]").forEach(c=>c.addEventListener("click",
()=>{$("hs").value=c.dataset.st;hostFilter();$("hosts").scrollIntoView();}));
 load().then((data)=>{D=data;$("pq").addEventListener("input",renderProblems);$("ps").addEventListener("change",
renderProblems);sortable($("problems"));
  renderProblems();renderPlots();renderHeat();renderGemm();document.body.setAttribute("data-ready","1");
 }).catch((err)=>{$("loaderr").textContent="The interactive parts could not load: "+err.message;document.body.setAttribute("data-ready","error");});
}
start();
})();
